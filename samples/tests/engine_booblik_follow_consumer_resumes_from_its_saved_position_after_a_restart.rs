//! On booblik (an embedded broker): the body the JetStream test runs too
//! (`engine_samples_support::follow_consumer_resumes_from_its_saved_position`): the
//! `follow-consumer` binary, SIGKILLed mid-run and started again, resumes at the positions it
//! saved and handles the rest of every partition.

mod engine_samples_support;

use engine_samples_support::{booblik_engine, start_booblik};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_follow_consumer_resumes_from_its_saved_position_on_booblik() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, flags) = start_booblik(&dir.path().join("broker")).await;
    engine_samples_support::follow_consumer_resumes_from_its_saved_position(
        booblik_engine(&broker).await,
        &flags,
        dir.path(),
    )
    .await;
}
