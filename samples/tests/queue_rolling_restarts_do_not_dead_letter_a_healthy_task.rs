//! A clean shutdown of a worker that holds a task writes a release record, which frees the task
//! at once and does not count as an expired lease. So three rolling restarts — start a new
//! worker, stop the old one — with a long task in hand do not dead-letter it (three expired
//! leases would, at the default `max_expired_leases` of 3): the fourth worker completes it.
//!
//! Writing releases is behind the protocol level (`ProtocolLevel::V2`, see
//! `docs/task-queue.md`, *Rolling out a new record kind*), so the workers here run at V2.

mod queue_worker_support;

use booblik_samples::queue::record::ProtocolLevel;
use booblik_samples::queue::verify::{VerifyConfig, verify};
use booblik_samples::queue::worker::{Worker, WorkerConfig, read_logs, submit_task, wall_clock_ms};
use queue_worker_support::{EmbeddedBroker, RunningWorker, quick_config, wait_until};

const LEASE_MS: u64 = 600;
/// Longer than the whole test: only a worker that is not stopped finishes it.
const LONG_WORK_MS: u64 = 120_000;
const SHORT_WORK_MS: u64 = 10;
const RESTARTS: usize = 3;

fn config(work_ms: u64) -> WorkerConfig {
    WorkerConfig {
        protocol: ProtocolLevel::V2,
        ..quick_config(LEASE_MS, work_ms)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_rolling_restarts_leave_a_healthy_task_to_be_completed() {
    let broker = EmbeddedBroker::start().await;
    let (task_id, _) = submit_task(&broker.client().await, "tasks", b"long".to_vec())
        .await
        .unwrap();

    let mut holder = RunningWorker::spawn(
        Worker::start(broker.client().await, config(LONG_WORK_MS))
            .await
            .unwrap(),
    );
    for restart in 0..RESTARTS {
        wait_until("the current worker holds the task", || async {
            holder
                .worker
                .current_task()
                .is_some_and(|(id, _)| id == task_id)
        })
        .await;
        let work_ms = if restart + 1 == RESTARTS {
            SHORT_WORK_MS
        } else {
            LONG_WORK_MS
        };
        let next = RunningWorker::spawn(
            Worker::start(broker.client().await, config(work_ms))
                .await
                .unwrap(),
        );
        holder.stop().await;
        holder = next;
    }
    wait_until("the last worker completes the task", || async {
        holder.worker.stats().completed == 1
    })
    .await;
    holder.stop().await;

    let (tasks, claims) = read_logs(&broker.client().await, "tasks", "claims")
        .await
        .unwrap();
    let report = verify(&tasks, &claims, &VerifyConfig::drained_at(wall_clock_ms()));
    assert!(report.is_clean(), "{:#?}", report.violations);
    assert_eq!(report.summary.completed, 1);
    assert_eq!(report.summary.dead_lettered, 0);
    assert_eq!(report.summary.wins, RESTARTS as u64 + 1);
    assert_eq!(
        report.summary.expired_leases, 0,
        "a release is not an expiry"
    );
    assert_eq!(report.summary.releases, RESTARTS as u64);
}
