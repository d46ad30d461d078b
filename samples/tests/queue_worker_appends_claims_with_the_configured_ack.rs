//! Every record a worker appends to the claims log (claims, extends, dones) is acknowledged
//! under its `claim_ack` policy: FORCED unless configured otherwise.

mod queue_worker_support;

use booblik_client::AckPolicy;
use booblik_samples::queue::worker::WorkerConfig;
use queue_worker_support::{quick_config, run_one_worker_through_a_proxy};

const TASKS: u64 = 2;

/// Runs one worker with `config` through a proxy until it completes two tasks; returns the ack
/// policies of its appends to `claims`.
async fn claims_appends_of_a_worker(config: WorkerConfig) -> Vec<AckPolicy> {
    let (seen, _, _) = run_one_worker_through_a_proxy(config, TASKS).await;
    seen.produces
        .into_iter()
        .filter(|(topic, _)| topic == "claims")
        .map(|(_, ack)| ack)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_are_forced_by_default() {
    let acks = claims_appends_of_a_worker(quick_config(1_000, 20)).await;
    // A claim per task, and the last done alone: the others ride with the next claim.
    assert!(
        acks.len() as u64 > TASKS,
        "a claim per task and the last done: {acks:?}"
    );
    assert!(acks.iter().all(|ack| *ack == AckPolicy::Forced), "{acks:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_use_the_configured_ack_policy() {
    let config = WorkerConfig {
        claim_ack: AckPolicy::Written,
        ..quick_config(1_000, 20)
    };
    let acks = claims_appends_of_a_worker(config).await;
    // A claim per task, and the last done alone: the others ride with the next claim.
    assert!(
        acks.len() as u64 > TASKS,
        "a claim per task and the last done: {acks:?}"
    );
    assert!(
        acks.iter().all(|ack| *ack == AckPolicy::Written),
        "{acks:?}"
    );
}
