//! A worker killed in the middle of a task (no done, no goodbye) does not lose the task: while it
//! lived its extends kept the task its own; once dead, its lease lapses and another worker
//! completes the task under a newer token. The verifier finds every task completed exactly once
//! and none lost.

mod queue_worker_support;

use booblik_samples::queue::record::ClaimsRecord;
use booblik_samples::queue::verify::{Report, VerifyConfig, verify};
use booblik_samples::queue::worker::{Worker, read_logs, submit_task, wall_clock_ms};
use queue_worker_support::{EmbeddedBroker, RunningWorker, quick_config, wait_until};

const TASKS: u64 = 6;
/// The victim's lease: long enough that its extends (every 500 ms) hold it on a loaded machine.
const VICTIM_LEASE_MS: u64 = 1_500;
const SURVIVOR_LEASE_MS: u64 = 600;
/// The victim never finishes on its own: it can only be killed.
const VICTIM_WORK_MS: u64 = 60_000;
const SURVIVOR_WORK_MS: u64 = 50;

async fn verify_now(client: &booblik_client::Client) -> (Report, Vec<(i64, ClaimsRecord)>) {
    let (tasks, claims) = read_logs(client, "tasks", "claims").await.unwrap();
    let report = verify(&tasks, &claims, &VerifyConfig::drained_at(wall_clock_ms()));
    (report, claims)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_in_hand_of_a_killed_worker_is_completed_by_another_after_the_lease() {
    let broker = EmbeddedBroker::start().await;
    let submitter = broker.client().await;
    for n in 0..TASKS {
        submit_task(&submitter, "tasks", vec![n as u8])
            .await
            .unwrap();
    }

    let victim = RunningWorker::spawn(
        Worker::start(
            broker.client().await,
            quick_config(VICTIM_LEASE_MS, VICTIM_WORK_MS),
        )
        .await
        .unwrap(),
    );
    let victim_id = victim.worker.worker_id();
    wait_until("the victim is working", || async {
        victim.worker.current_task().is_some()
    })
    .await;
    let (victim_task, victim_token) = victim.worker.current_task().unwrap();

    let mut survivors = Vec::new();
    for _ in 0..2 {
        survivors.push(RunningWorker::spawn(
            Worker::start(
                broker.client().await,
                quick_config(SURVIVOR_LEASE_MS, SURVIVOR_WORK_MS),
            )
            .await
            .unwrap(),
        ));
    }
    // While the victim lives, everything but its task gets done, and its task stays its own
    // for longer than a lease: the extends hold it.
    wait_until("the other tasks are completed", || async {
        survivors
            .iter()
            .map(|s| s.worker.stats().completed)
            .sum::<u64>()
            == TASKS - 1
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(VICTIM_LEASE_MS + 200)).await;
    assert_eq!(
        victim.worker.current_task(),
        Some((victim_task, victim_token)),
        "a live holder keeps its task"
    );

    // Kill it: abort the run mid-task, then drop the worker with its followers.
    victim.handle.abort();
    assert!(victim.handle.await.unwrap_err().is_cancelled());
    drop(victim.worker);

    // Wait on the survivors' own count, not on the log: a done is in the log before its worker
    // has read the verdict, and a worker stopped in between may append it again (harmless by
    // the rules, but then the log would not show the single done this test asserts).
    wait_until("the victim's task is completed too", || async {
        survivors
            .iter()
            .map(|s| s.worker.stats().completed)
            .sum::<u64>()
            == TASKS
    })
    .await;
    for survivor in survivors {
        survivor.stop().await;
    }

    let (report, claims) = verify_now(&submitter).await;
    assert!(report.is_clean(), "{:#?}", report.violations);
    assert_eq!(report.summary.completed, TASKS);
    assert_eq!(report.summary.dones_accepted, TASKS);
    assert_eq!(report.summary.duplicate_effects, 0);
    assert_eq!(report.summary.lost, 0);
    assert_eq!(
        report.summary.expired_leases, 1,
        "only the victim's lease lapsed"
    );
    assert_eq!(report.summary.confirmed_duplicate_executions, 1);

    let dones: Vec<_> = claims
        .iter()
        .filter_map(|(_, record)| match record {
            ClaimsRecord::Done(done) if done.task_id == victim_task => Some(done),
            _ => None,
        })
        .collect();
    assert_eq!(dones.len(), 1, "{dones:#?}");
    assert_ne!(dones[0].worker_id, victim_id);
    assert!(
        dones[0].token > victim_token,
        "completed under a newer token"
    );
}
