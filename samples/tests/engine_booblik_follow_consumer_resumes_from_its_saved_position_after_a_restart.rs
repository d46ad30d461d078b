//! On booblik (an embedded broker): the body the JetStream test runs too
//! (`engine_samples_support::follow_consumer_resumes_from_its_saved_position`): the
//! `follow-consumer` binary, SIGKILLed mid-run and started again, resumes at the positions it
//! saved and handles the rest of every partition.

mod engine_samples_support;

use booblik_client::{Client, ConnectionConfig};
use booblik_samples::engine::BooblikEngine;
use booblik_samples::support::embedded_broker;
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_follow_consumer_resumes_from_its_saved_position_on_booblik() {
    let dir = tempfile::tempdir().unwrap();
    let broker = embedded_broker::start(
        &dir.path().join("broker"),
        "127.0.0.1:0".parse().unwrap(),
        embedded_broker::DEMO_TOPICS,
    )
    .await
    .unwrap();
    let client = Client::connect(broker.local_addr().to_string(), ConnectionConfig::default())
        .await
        .unwrap();
    let flags = ["--broker".to_owned(), broker.local_addr().to_string()];
    engine_samples_support::follow_consumer_resumes_from_its_saved_position(
        Arc::new(BooblikEngine::new(client)),
        &flags,
        dir.path(),
    )
    .await;
}
