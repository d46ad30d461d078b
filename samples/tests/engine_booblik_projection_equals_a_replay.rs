//! On booblik (an embedded broker): the body the JetStream test runs too
//! (`engine_samples_support::projection_equals_a_replay`): the projection's read model equals a
//! replay of the log, after catching up and after following.

mod engine_samples_support;

use booblik_client::{Client, ConnectionConfig};
use booblik_samples::engine::BooblikEngine;
use booblik_samples::support::embedded_broker;
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_projection_equals_a_replay_on_booblik() {
    let dir = tempfile::tempdir().unwrap();
    let broker = embedded_broker::start(
        dir.path(),
        "127.0.0.1:0".parse().unwrap(),
        embedded_broker::DEMO_TOPICS,
    )
    .await
    .unwrap();
    let client = Client::connect(broker.local_addr().to_string(), ConnectionConfig::default())
        .await
        .unwrap();
    let flags = ["--broker".to_owned(), broker.local_addr().to_string()];
    engine_samples_support::projection_equals_a_replay(
        Arc::new(BooblikEngine::new(client)),
        &flags,
    )
    .await;
}
