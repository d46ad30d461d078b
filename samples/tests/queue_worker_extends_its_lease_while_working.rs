//! A worker whose task takes several leases keeps it by extending: nobody else is granted the
//! task while the holder is alive, and the task completes under its first and only lease.

mod queue_worker_support;

use booblik_samples::queue::verify::{VerifyConfig, verify};
use booblik_samples::queue::worker::{Worker, read_logs, submit_task, wall_clock_ms};
use queue_worker_support::{EmbeddedBroker, RunningWorker, quick_config, wait_until};

/// Long enough that a loaded 2-core CI machine confirms each extend in time: the worker gives the
/// lease up locally 10 % before it lapses, so a confirmation may take up to lease × 0.9 − the
/// extend interval (lease / 3) ≈ 850 ms here.
const LEASE_MS: u64 = 1_500;
/// Three leases' worth of work: without extends the lease would lapse twice over.
const WORK_MS: u64 = 4_500;
/// Extends every 500 ms over 4.5 s: about eight; a handful proves the renewal loop.
const MIN_EXTENDS: u64 = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_task_is_held_by_extends_and_never_granted_twice() {
    let broker = EmbeddedBroker::start().await;
    let submitter = broker.client().await;
    let workers = [
        RunningWorker::spawn(
            Worker::start(broker.client().await, quick_config(LEASE_MS, WORK_MS))
                .await
                .unwrap(),
        ),
        RunningWorker::spawn(
            Worker::start(broker.client().await, quick_config(LEASE_MS, WORK_MS))
                .await
                .unwrap(),
        ),
    ];
    submit_task(&submitter, "tasks", b"long".to_vec())
        .await
        .unwrap();
    wait_until("the task is completed", || async {
        workers
            .iter()
            .map(|w| w.worker.stats().completed)
            .sum::<u64>()
            == 1
    })
    .await;
    let mut stats = Vec::new();
    for worker in workers {
        stats.push(worker.stop().await);
    }

    let holder = stats
        .iter()
        .find(|s| s.completed == 1)
        .expect("one worker completed it");
    assert_eq!(holder.wins, 1);
    assert_eq!(holder.leases_lost, 0);
    assert!(holder.extends >= MIN_EXTENDS, "{holder:?}");
    assert_eq!(stats.iter().map(|s| s.wins).sum::<u64>(), 1, "{stats:?}");

    let (tasks, claims) = read_logs(&submitter, "tasks", "claims").await.unwrap();
    let report = verify(&tasks, &claims, &VerifyConfig::drained_at(wall_clock_ms()));
    assert!(report.is_clean(), "{:#?}", report.violations);
    assert_eq!(report.summary.completed, 1);
    assert_eq!(report.summary.wins, 1);
    assert_eq!(report.summary.expired_leases, 0);
    assert_eq!(report.summary.void_extends, 0);
    // An extend still in flight when the work finished is in the log, but its verdict was never
    // read by the worker.
    assert!(
        (holder.extends..=holder.extends + 1).contains(&report.summary.extends),
        "{} extends in the log, {} counted by the holder",
        report.summary.extends,
        holder.extends
    );
}
