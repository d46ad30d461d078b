//! Real workers with `Pick::Rendezvous` (protocol level 2): while idle they heartbeat, so each
//! counts the others as live and ranks tasks over them; given a backlog they complete every task
//! exactly once, each granted once, and the verifier finds the log clean. (How few races they
//! lose is the state-level test's to show: here the views are not level, and the count is
//! reported, not asserted.)

mod queue_worker_support;

use booblik_samples::queue::pick::Pick;
use booblik_samples::queue::record::ProtocolLevel;
use booblik_samples::queue::verify::{VerifyConfig, verify};
use booblik_samples::queue::worker::{Worker, WorkerConfig, read_logs, wall_clock_ms};
use queue_worker_support::{
    EmbeddedBroker, RunningWorker, quick_config, submit_numbered_tasks, wait_until,
};

const WORKERS: usize = 3;
const TASKS: u64 = 30;
const LEASE_MS: u64 = 600;
const WORK_MS: u64 = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_rendezvous_workers_see_each_other_live_and_complete_every_task_once() {
    let broker = EmbeddedBroker::start().await;
    let mut workers = Vec::new();
    for _ in 0..WORKERS {
        let config = WorkerConfig {
            pick: Pick::Rendezvous,
            protocol: ProtocolLevel::V2,
            ..quick_config(LEASE_MS, WORK_MS)
        };
        workers.push(RunningWorker::spawn(
            Worker::start(broker.client().await, config).await.unwrap(),
        ));
    }
    // Idle workers have no claims or extends to show they are alive: only heartbeats do.
    wait_until("every worker sees all three live", || async {
        workers.iter().all(|w| {
            w.worker
                .view()
                .with_state(|state| state.live_workers(wall_clock_ms()).len())
                == WORKERS
        })
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
    })
    .await;
    for worker in workers {
        worker.stop().await;
    }

    let (tasks, claims) = read_logs(&submitter, "tasks", "claims").await.unwrap();
    let report = verify(&tasks, &claims, &VerifyConfig::drained_at(wall_clock_ms()));
    assert!(report.is_clean(), "{:#?}", report.violations);
    let summary = &report.summary;
    assert_eq!(summary.completed, TASKS);
    assert_eq!(summary.wins, TASKS, "each task granted once");
    assert_eq!(summary.duplicate_effects, 0);
    assert!(summary.heartbeats >= WORKERS as u64, "{summary:?}");
    eprintln!(
        "{WORKERS} workers, {TASKS} tasks, pick rendezvous: {} claims, {} lost races, {} heartbeats",
        summary.claims, summary.lost_races, summary.heartbeats
    );
}
