//! A follow consumer whose broker comes back with a different log under its position — what a
//! broker machine crash that lost unsynced records looks like once new records took their
//! offsets — stops with `LogRewritten` instead of silently skipping the new records.
//!
//! The crash is played by two brokers on one address: the first holds the records the consumer
//! reads; the second, started over a fresh data directory after the first stops, holds other
//! records at the same offsets and beyond.

mod events_support;

use std::sync::Arc;

use booblik_client::{AckPolicy, Client, ConnectionConfig, TopicName};
use booblik_offset_store::InMemoryOffsetStore;
use booblik_protocol::RecordSet;
use booblik_samples::engine::{BooblikEngine, ReadLimits};
use booblik_samples::events::follow::{FollowConfig, FollowError, FollowState, run_follow};
use booblik_samples::support::embedded_broker;
use booblik_samples::support::shutdown::Shutdown;
use events_support::{WAIT_LIMIT, free_addr};

const TOPIC: &str = "events";

async fn produce(client: &Client, prefix: &str, count: usize) {
    let connection = client.open_connection().await.unwrap();
    let topic = TopicName::new(TOPIC).unwrap();
    let payloads: Vec<String> = (0..count).map(|n| format!("{prefix}-{n}")).collect();
    connection
        .produce(
            &topic,
            0,
            AckPolicy::Written,
            RecordSet::from_payloads(&payloads).unwrap(),
        )
        .await
        .unwrap();
}

async fn connect(addr: std::net::SocketAddr) -> Client {
    Client::connect(addr.to_string(), ConnectionConfig::default())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_rewritten_under_the_position_stops_the_consumer_instead_of_skipping() {
    let addr = free_addr();
    let dir = tempfile::tempdir().unwrap();
    let first = embedded_broker::start(&dir.path().join("before"), addr, "events:1")
        .await
        .unwrap();
    produce(&connect(addr).await, "before", 10).await;

    let state = FollowState::new();
    let follow = tokio::spawn(run_follow(
        Arc::new(BooblikEngine::new(connect(addr).await)),
        Arc::new(InMemoryOffsetStore::new()),
        FollowConfig {
            topic: TOPIC.into(),
            partitions: Some(vec![0]),
            consumer_name: "rewrite".into(),
            limits: ReadLimits {
                wait: std::time::Duration::from_millis(100),
                ..ReadLimits::default()
            },
        },
        Arc::clone(&state),
        Shutdown::new(),
    ));
    let checkpointed = || state.partitions().get(&0).and_then(|p| p.checkpointed);
    tokio::time::timeout(WAIT_LIMIT, async {
        while checkpointed() != Some(10) {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the consumer handles the first broker's ten records");

    // The "crash": the log the consumer read is gone; the next broker's log has other records
    // at offsets 0..15, so a FETCH at the consumer's position (10) would succeed.
    first.shutdown().await.unwrap();
    let second = embedded_broker::start(&dir.path().join("after"), addr, "events:1")
        .await
        .unwrap();
    produce(&connect(addr).await, "after", 15).await;

    let outcome = tokio::time::timeout(WAIT_LIMIT, follow)
        .await
        .expect("the consumer stops by itself")
        .unwrap();
    match outcome {
        Err(FollowError::LogRewritten {
            partition: 0,
            offset: 9,
            found_crc: Some(_),
            ..
        }) => {}
        other => panic!("expected LogRewritten at offset 9, got {other:?}"),
    }
    assert_eq!(
        checkpointed(),
        Some(10),
        "none of the second log's records was handled"
    );
    second.shutdown().await.unwrap();
}
