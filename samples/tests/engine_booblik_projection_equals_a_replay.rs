//! On booblik (an embedded broker): the body the JetStream test runs too
//! (`engine_samples_support::projection_equals_a_replay`): the projection's read model equals a
//! replay of the log, after catching up and after following.

mod engine_samples_support;

use engine_samples_support::{booblik_engine, start_booblik};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_projection_equals_a_replay_on_booblik() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, flags) = start_booblik(dir.path()).await;
    engine_samples_support::projection_equals_a_replay(booblik_engine(&broker).await, &flags).await;
}
