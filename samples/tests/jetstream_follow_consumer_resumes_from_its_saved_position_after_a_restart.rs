//! On JetStream (a 3-node cluster, R3 streams, started here from the installed `nats-server`):
//! the `follow-consumer` binary, SIGKILLed mid-run and started again, resumes at the positions
//! it saved in its `FileOffsetStore` (stream sequences) and handles the rest of every partition,
//! no record skipped or repeated by the second run. The same body as on booblik
//! (`engine_samples_support::follow_consumer_resumes_from_its_saved_position`).
//!
//! Needs `nats-server`: `#[ignore]`d, run by `.ci/run` with `--ignored`
//! (`cargo test -p booblik-samples --test jetstream_follow_consumer_resumes_from_its_saved_position_after_a_restart -- --ignored`).

mod engine_samples_support;

use std::sync::Arc;
use std::time::Duration;

use booblik_samples::engine::JetStreamEngine;
use booblik_samples::support::nats_cluster::NatsCluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nats-server; run by .ci/run with --ignored"]
async fn the_follow_consumer_resumes_from_its_saved_position_on_jetstream_r3() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = NatsCluster::start(&dir.path().join("nats"), 3).unwrap();
    let engine = JetStreamEngine::connect(&cluster.urls()).await.unwrap();
    engine.wait_ready(Duration::from_secs(30)).await.unwrap();
    // The first publisher run creates the topic: 3 partitions, R3 (the flags' defaults).
    let flags = [
        "--engine".to_owned(),
        "jetstream".to_owned(),
        "--nats-url".to_owned(),
        cluster.urls().join(","),
    ];
    engine_samples_support::follow_consumer_resumes_from_its_saved_position(
        Arc::new(engine),
        &flags,
        dir.path(),
    )
    .await;
}
