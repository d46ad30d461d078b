//! A worker refuses to start on a claims log that no longer starts at its origin: retention
//! dropped claims, and a verdict folded over what is left would differ from the verdicts of the
//! workers that read the whole log (a lease granted in a dropped record looks free). The refusal
//! names the setting to fix: the claims topic's retention.
//!
//! The broker here keeps tiny segments and only a few hundred bytes per partition, so that a
//! few dozen claims records push the claims log's start above 0.

mod queue_worker_support;

use std::time::Duration;

use booblik_broker::{Broker, BrokerConfig, parse_topics};
use booblik_client::{AckPolicy, Client, ConnectionConfig, TopicName};
use booblik_protocol::RecordSet;
use booblik_samples::engine::{BooblikEngine, LogEngine};
use booblik_samples::queue::record::{Claim, ClaimsRecord};
use booblik_samples::queue::worker::Worker;
use queue_worker_support::{quick_config, wait_until};
use uuid::Uuid;

/// Segments of a few records each, so that retention has sealed segments to drop.
const SEGMENT_BYTES: u64 = 256;
/// Keeps about two segments' worth of bytes per partition.
const RETENTION_BYTES: u64 = 512;
/// Claims records written: far more than the retained bytes hold.
const CLAIMS_WRITTEN: usize = 60;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_refuses_a_claims_log_that_retention_truncated_and_names_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = BrokerConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        topics: parse_topics("tasks:1,claims:1").unwrap(),
        ..BrokerConfig::default()
    };
    config.storage.data_dir = dir.path().to_path_buf();
    config.storage.segment_bytes = SEGMENT_BYTES;
    config.storage.retention_bytes = Some(RETENTION_BYTES);
    config.storage.retention_check_interval_ms = 10;
    let broker = Broker::start(config).await.unwrap();
    let client = Client::connect(broker.local_addr().to_string(), ConnectionConfig::default())
        .await
        .unwrap();

    // Claims from some other worker, one record per PRODUCE (each in the log on its own).
    let connection = client.open_connection().await.unwrap();
    let claims = TopicName::new("claims").unwrap();
    for n in 0..CLAIMS_WRITTEN {
        let claim = ClaimsRecord::Claim(Claim {
            task_id: Uuid::from_u128(n as u128),
            worker_id: Uuid::from_u128(0xAAAA),
            claimed_at_ms: 1,
            lease_ms: 1_000,
        });
        connection
            .produce(
                &claims,
                0,
                AckPolicy::Written,
                RecordSet::from_payloads([claim.encode()]).unwrap(),
            )
            .await
            .unwrap();
    }
    let engine = BooblikEngine::new(client.clone());
    let claims = engine.open("claims", 0).await.unwrap();
    wait_until("retention drops the oldest claims", || async {
        let bounds = claims.bounds().await.unwrap();
        bounds.start > bounds.origin
    })
    .await;

    let started = tokio::time::timeout(
        Duration::from_secs(20),
        Worker::start(client.clone(), quick_config(1_000, 10)),
    )
    .await
    .expect("the worker decides at start");
    let error = match started {
        Ok(_) => panic!("the worker started on a claims log that lost records to retention"),
        Err(error) => format!("{error:#}"),
    };
    assert!(error.contains("claims"), "names the log: {error}");
    assert!(error.contains("retention"), "names the setting: {error}");
    broker.shutdown().await.unwrap();
}
