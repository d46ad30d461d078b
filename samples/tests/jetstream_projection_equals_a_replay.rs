//! On JetStream (a 3-node cluster, R3 streams, started here from the installed `nats-server`):
//! the projection's read model equals a replay of the log, after catching up on history and
//! after following events published while it runs; the events come from the `publisher` binary
//! with `--engine jetstream`, which creates the topic's streams. The same body as on booblik
//! (`engine_samples_support::projection_equals_a_replay`).
//!
//! Needs `nats-server`: `#[ignore]`d, run by `.ci/run` with `--ignored`
//! (`cargo test -p booblik-samples --test jetstream_projection_equals_a_replay -- --ignored`).

mod engine_samples_support;

use std::sync::Arc;
use std::time::Duration;

use booblik_samples::engine::JetStreamEngine;
use booblik_samples::support::nats_cluster::NatsCluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nats-server; run by .ci/run with --ignored"]
async fn the_projection_equals_a_replay_on_jetstream_r3() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = NatsCluster::start(dir.path(), 3).unwrap();
    let engine = JetStreamEngine::connect(&cluster.urls()).await.unwrap();
    engine.wait_ready(Duration::from_secs(30)).await.unwrap();
    let flags = [
        "--engine".to_owned(),
        "jetstream".to_owned(),
        "--nats-url".to_owned(),
        cluster.urls().join(","),
    ];
    engine_samples_support::projection_equals_a_replay(Arc::new(engine), &flags).await;
}
