//! Three workers in one pool — one pair of followers, one view — complete every task exactly
//! once, and never lose a race to each other: siblings pick around the task a sibling is
//! claiming. With `Pick::First` three independent workers collide on nearly every claim
//! (`queue_integration_three_workers_complete_every_task_once.rs`); in a pool they cannot.

mod queue_worker_support;

use booblik_samples::queue::pick::Pick;
use booblik_samples::queue::verify::{VerifyConfig, verify};
use booblik_samples::queue::worker::{WorkerConfig, WorkerPool, read_logs, wall_clock_ms};
use queue_worker_support::{
    EmbeddedBroker, RunningWorker, quick_config, submit_numbered_tasks, wait_until,
};
use uuid::Uuid;

const WORKERS: usize = 3;
const TASKS: u64 = 30;
/// Long against the work: no lease lapses, so every task is granted once.
const LEASE_MS: u64 = 3_000;
const WORK_MS: u64 = 10;

fn config() -> WorkerConfig {
    // `First`: every worker goes for the oldest task — the worst case for collisions.
    WorkerConfig {
        pick: Pick::First,
        worker_id: Uuid::new_v4(),
        ..quick_config(LEASE_MS, WORK_MS)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_siblings_complete_every_task_once_without_losing_a_race_to_each_other() {
    let broker = EmbeddedBroker::start().await;
    let pool = WorkerPool::start(broker.client().await, &config())
        .await
        .unwrap();
    let mut workers = Vec::new();
    for _ in 0..WORKERS {
        // Each member appends through a connection of its own; the view is the pool's.
        let member = pool
            .start_worker(broker.client().await, config())
            .await
            .unwrap();
        workers.push(RunningWorker::spawn(member));
    }
    wait_until("every worker is idle", || async {
        workers.iter().all(|w| w.worker.stats().idle_waits >= 1)
    })
    .await;

    let submitter = broker.client().await;
    submit_numbered_tasks(&submitter, TASKS).await;
    wait_until("every task is completed", || async {
        workers
            .iter()
            .map(|w| w.worker.stats().completed)
            .sum::<u64>()
            == TASKS
            && workers.iter().all(|w| w.worker.current_task().is_none())
    })
    .await;
    let mut stats = Vec::new();
    for worker in workers {
        stats.push(worker.stop().await);
    }

    let (tasks, claims) = read_logs(&submitter, "tasks", "claims").await.unwrap();
    let report = verify(&tasks, &claims, &VerifyConfig::drained_at(wall_clock_ms()));
    assert!(report.is_clean(), "{:#?}", report.violations);
    let summary = &report.summary;
    assert_eq!(summary.completed, TASKS);
    assert_eq!(summary.duplicate_executions, 0);
    assert_eq!(summary.wins, TASKS, "each task granted once");
    assert_eq!(
        summary.lost_races, 0,
        "pool siblings raced each other: {stats:?}"
    );
    assert!(
        stats.iter().filter(|s| s.completed > 0).count() > 1,
        "the members shared the work: {stats:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_refuses_a_second_member_with_the_same_worker_id() {
    let broker = EmbeddedBroker::start().await;
    let pool = WorkerPool::start(broker.client().await, &config())
        .await
        .unwrap();
    let first = config();
    let _member = pool
        .start_worker(broker.client().await, first.clone())
        .await
        .unwrap();
    let error = pool
        .start_worker(broker.client().await, first)
        .await
        .expect_err("two members under one id would take each other's verdicts");
    assert!(
        format!("{error:#}").contains("is a member of this pool already"),
        "{error:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_refuses_a_member_that_judges_by_other_rules() {
    let broker = EmbeddedBroker::start().await;
    let pool = WorkerPool::start(broker.client().await, &config())
        .await
        .unwrap();
    let mut other = config();
    other.queue.max_lease_ms += 1;
    let error = pool
        .start_worker(broker.client().await, other)
        .await
        .expect_err("a member must judge by the pool's QueueConfig");
    assert!(
        format!("{error:#}").contains("every reader must judge alike"),
        "{error:#}"
    );
}
