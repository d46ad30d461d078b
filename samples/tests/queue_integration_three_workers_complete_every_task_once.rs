//! Three workers racing for the same backlog complete every task exactly once; the claims they
//! lose are counted, by each worker and in the log alike.

mod queue_worker_support;

use booblik_samples::queue::pick::Pick;
use booblik_samples::queue::verify::{VerifyConfig, verify};
use booblik_samples::queue::worker::{Worker, WorkerConfig, WorkerStats, read_logs, wall_clock_ms};
use queue_worker_support::{
    EmbeddedBroker, RunningWorker, quick_config, submit_numbered_tasks, wait_until,
};

const WORKERS: usize = 3;
const TASKS: u64 = 30;
/// Long against the work: no lease lapses, so every task is granted once.
const LEASE_MS: u64 = 3_000;
const WORK_MS: u64 = 10;

fn totals(stats: &[WorkerStats]) -> WorkerStats {
    stats
        .iter()
        .fold(WorkerStats::default(), |sum, s| WorkerStats {
            claims: sum.claims + s.claims,
            wins: sum.wins + s.wins,
            lost_races: sum.lost_races + s.lost_races,
            completed: sum.completed + s.completed,
            leases_lost: sum.leases_lost + s.leases_lost,
            extends: sum.extends + s.extends,
            releases: sum.releases + s.releases,
            idle_waits: sum.idle_waits + s.idle_waits,
            events_dropped: sum.events_dropped + s.events_dropped,
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_task_is_completed_once_and_lost_races_are_counted() {
    let broker = EmbeddedBroker::start().await;
    let mut workers = Vec::new();
    for _ in 0..WORKERS {
        // `First`: every worker goes for the same task, so claims collide.
        let config = WorkerConfig {
            pick: Pick::First,
            ..quick_config(LEASE_MS, WORK_MS)
        };
        workers.push(RunningWorker::spawn(
            Worker::start(broker.client().await, config).await.unwrap(),
        ));
    }
    wait_until("every worker is idle", || async {
        workers.iter().all(|w| w.worker.stats().idle_waits >= 1)
    })
    .await;

    let submitter = broker.client().await;
    submit_numbered_tasks(&submitter, TASKS).await;
    wait_until(
        "every task is completed and every verdict known",
        || async {
            let stats: Vec<_> = workers.iter().map(|w| w.worker.stats()).collect();
            let sum = totals(&stats);
            sum.completed == TASKS
                && stats.iter().all(|s| s.claims == s.wins + s.lost_races)
                && workers.iter().all(|w| w.worker.current_task().is_none())
        },
    )
    .await;
    let mut stats = Vec::new();
    for worker in workers {
        stats.push(worker.stop().await);
    }
    let sum = totals(&stats);

    let (tasks, claims) = read_logs(&submitter, "tasks", "claims").await.unwrap();
    let report = verify(&tasks, &claims, &VerifyConfig::drained_at(wall_clock_ms()));
    assert!(report.is_clean(), "{:#?}", report.violations);
    let summary = &report.summary;
    assert_eq!(summary.tasks, TASKS);
    assert_eq!(summary.completed, TASKS);
    assert_eq!(summary.dones_accepted, TASKS);
    assert_eq!(summary.duplicate_executions, 0);
    assert_eq!(summary.duplicate_effects, 0);
    assert_eq!(summary.wins, TASKS, "each task granted once");

    assert_eq!(sum.completed, TASKS);
    assert_eq!(sum.claims, summary.claims, "{stats:?}");
    assert_eq!(sum.wins, summary.wins, "{stats:?}");
    assert_eq!(sum.lost_races, summary.lost_races, "{stats:?}");
    assert_eq!(summary.claims, summary.wins + summary.lost_races);
    eprintln!(
        "{WORKERS} workers, {TASKS} tasks, pick first: {} claims, {} lost races",
        summary.claims, summary.lost_races
    );
}
