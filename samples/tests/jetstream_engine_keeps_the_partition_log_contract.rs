//! The JetStream engine keeps the partition-log contract (`engine_support::check_contract`) on
//! an R3 stream of a 3-node cluster started here from the installed `nats-server`.
//!
//! Needs `nats-server` (`apt-get install nats-server`): `#[ignore]`d in the plain test run,
//! run by `.ci/run` with `--ignored` after it installs the package, and locally with
//! `cargo test -p booblik-samples --test jetstream_engine_keeps_the_partition_log_contract -- --ignored`.

mod engine_support;

use std::time::Duration;

use booblik_samples::engine::JetStreamEngine;
use booblik_samples::engine::jetstream::StreamSettings;
use booblik_samples::support::nats_cluster::NatsCluster;

#[tokio::test]
#[ignore = "needs nats-server; run by .ci/run with --ignored"]
async fn the_jetstream_engine_keeps_the_partition_log_contract_on_r3() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = NatsCluster::start(dir.path(), 3).unwrap();
    let engine = JetStreamEngine::connect(&cluster.urls()).await.unwrap();
    engine.wait_ready(Duration::from_secs(30)).await.unwrap();
    engine
        .ensure_topics(&[("contract.v1".into(), 1)], &StreamSettings::default())
        .await
        .unwrap();
    engine_support::check_contract(&engine, "contract.v1").await;
}
