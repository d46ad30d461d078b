//! Every record a worker appends to the claims log (claims, extends, dones) is acknowledged
//! under its `claim_ack` policy: FORCED unless configured otherwise.

mod queue_worker_support;

use booblik_client::AckPolicy;
use booblik_samples::queue::worker::{Worker, WorkerConfig, submit_task};
use queue_worker_support::{
    EmbeddedBroker, RunningWorker, WatchingProxy, quick_config, wait_until,
};

const TASKS: u64 = 2;

/// Runs one worker with `config` through a proxy until it completes two tasks; returns the ack
/// policies of its appends to `claims`.
async fn claims_appends_of_a_worker(config: WorkerConfig) -> Vec<AckPolicy> {
    let broker = EmbeddedBroker::start().await;
    let proxy = WatchingProxy::start(broker.addr()).await;
    let submitter = broker.client().await;
    for _ in 0..TASKS {
        submit_task(&submitter, "tasks", b"payload".to_vec())
            .await
            .unwrap();
    }
    let worker = Worker::start(proxy.client().await, config).await.unwrap();
    let running = RunningWorker::spawn(worker);
    wait_until("both tasks are completed", || async {
        running.worker.stats().completed == TASKS
    })
    .await;
    running.stop().await;
    proxy
        .seen()
        .produces
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
