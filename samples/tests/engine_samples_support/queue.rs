//! The task queue's behaviour written once, run on each engine: `queue-submit` enqueues, three
//! in-process workers (each with an engine of its own, the way separate processes would have)
//! claim and work through one fencing sink, a fault is injected mid-run (the test file's: none on
//! booblik, SIGKILL of the claims stream's leader on JetStream), and then:
//!
//! * every submitted task was completed (the workers' completions, and the verifier's summary);
//! * `queue-verify` finds every invariant holding on the logs as read after the fault;
//! * the fencing sink holds exactly one effect per task, the one its work computed;
//! * no worker acted on a lease the log did not give it: every effect committed (including
//!   any that a newer holder later replaced) was committed under a token at which the verifier's
//!   replay of the claims log has a `ClaimWon` for that task by that worker.
//!
//! Nothing here branches on the engine; offsets are taken as the engine gives them.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use booblik_samples::engine::{IntoEngine, LogEngine};
use booblik_samples::queue::state::{Event, QueueConfig};
use booblik_samples::queue::verify::replay;
use booblik_samples::queue::worker::{
    Assignment, ResultSink, WorkFn, Worker, WorkerConfig, read_logs, result_of, simulated_work,
};
use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::watch;
use uuid::Uuid;

use super::Sample;

/// Tasks submitted.
pub const TASKS: u64 = 90;
/// Workers.
pub const WORKERS: usize = 3;
/// Simulated work per task.
pub const WORK_MS: u64 = 30;
/// The fault is injected once this many tasks have an effect.
pub const FAULT_AFTER_EFFECTS: usize = 20;
/// Longest wait for every task to be completed, fault and recovery included.
pub const RUN_LIMIT: Duration = Duration::from_mins(2);

/// Opens an engine for one worker.
pub type Connect = Arc<dyn Fn() -> BoxFuture<'static, Arc<dyn LogEngine>> + Send + Sync>;

/// `(worker, task, token)` of every effect a worker committed to the sink.
type Committed = Arc<Mutex<Vec<(Uuid, Uuid, i64)>>>;

/// Runs the queue on the engine `flags` point the binaries at, with workers on engines from
/// `connect`, leases of `lease_ms`, and `fault` run once [`FAULT_AFTER_EFFECTS`] effects are in
/// the sink; checks the promises listed in the module docs.
pub async fn queue_completes_every_task_through<F, Fut>(
    flags: &[String],
    connect: Connect,
    lease_ms: u64,
    fault: F,
) where
    F: FnOnce() -> Fut,
    Fut: Future<Output = ()>,
{
    submit(flags).await;

    let sink = ResultSink::new();
    let committed: Committed = Arc::default();
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut workers = Vec::with_capacity(WORKERS);
    let mut worker_ids = HashSet::new();
    for _ in 0..WORKERS {
        let config = WorkerConfig {
            lease_ms,
            work_ms: WORK_MS,
            ..WorkerConfig::default()
        };
        worker_ids.insert(config.worker_id);
        let work = recording(
            config.worker_id,
            sink.clone(),
            Arc::clone(&committed),
            simulated_work(WORK_MS),
        );
        let worker = Worker::start_with_work(connect().await, config, work)
            .await
            .expect("a worker starts");
        let worker = Arc::new(worker);
        let mut stop = stop_rx.clone();
        let running = Arc::clone(&worker);
        workers.push((
            worker,
            tokio::spawn(async move {
                running
                    .run(async move {
                        let _ = stop.wait_for(|stop| *stop).await;
                    })
                    .await
            }),
        ));
    }

    wait_for("the first effects", Duration::from_mins(1), || {
        sink.len() >= FAULT_AFTER_EFFECTS
    })
    .await;
    fault().await;
    let completed = || {
        workers
            .iter()
            .map(|(worker, _)| worker.stats().completed)
            .sum::<u64>()
    };
    // How long the queue stalled: from the fault to the next completion a worker learned from
    // the claims log (its done's verdict), plus one more for a claim made after the fault
    // (printed with --nocapture; docs/jetstream.md quotes it).
    let (completed_at_fault, fault_at) = (completed(), tokio::time::Instant::now());
    wait_for("two completions after the fault", RUN_LIMIT, || {
        completed() >= completed_at_fault + 2 * WORKERS as u64
    })
    .await;
    eprintln!(
        "{} more completions {:?} after the fault ({completed_at_fault} before it)",
        2 * WORKERS,
        fault_at.elapsed()
    );
    wait_for("every task completed", RUN_LIMIT, || {
        completed() >= TASKS || workers.iter().any(|(_, run)| run.is_finished())
    })
    .await;
    stop_tx.send_replace(true);
    let mut total_completed = 0;
    for (index, (_, run)) in workers.into_iter().enumerate() {
        let stats = tokio::time::timeout(Duration::from_secs(30), run)
            .await
            .expect("a worker stops when asked")
            .unwrap()
            .unwrap_or_else(|error| panic!("worker {index} failed: {error:#}"));
        total_completed += stats.completed;
    }
    assert_eq!(total_completed, TASKS, "every task completed once");

    // The verifier's binary, on the logs as they are after the fault.
    let report = verify(flags).await;
    assert_eq!(report["clean"], true, "queue-verify: {report:#}");
    assert_eq!(report["summary"]["tasks"], TASKS, "{report:#}");
    assert_eq!(report["summary"]["completed"], TASKS, "{report:#}");

    // The sink: one effect per task, the result of its own payload.
    let engine = connect().await;
    let (tasks, claims) = read_logs(&engine, "tasks", "claims")
        .await
        .expect("both logs read back");
    assert_eq!(tasks.len() as u64, TASKS);
    assert_eq!(sink.len() as u64, TASKS, "an effect for every task");
    for (_, task) in &tasks {
        let effect = sink.effect(task.task_id).expect("the task has an effect");
        assert_eq!(
            effect.effect,
            result_of(&task.payload),
            "the task's own result"
        );
    }

    // Every effect under a lease the log gave: a winning claim of that worker for that task at
    // the effect's token.
    let (_, trace, _) = replay(&tasks, &claims, QueueConfig::default());
    let won: HashMap<i64, (Uuid, Uuid)> = trace
        .iter()
        .filter_map(|step| match step.event {
            Event::ClaimWon {
                task_id,
                worker_id,
                token,
                ..
            } => Some((token, (task_id, worker_id))),
            _ => None,
        })
        .collect();
    let committed = committed.lock().unwrap().clone();
    assert!(
        committed.len() as u64 >= TASKS,
        "{} effects",
        committed.len()
    );
    for (worker_id, task_id, token) in committed {
        assert!(worker_ids.contains(&worker_id));
        assert_eq!(
            won.get(&token),
            Some(&(task_id, worker_id)),
            "worker {worker_id} committed task {task_id}'s effect under token {token}, which the \
             log did not grant it"
        );
    }
}

/// Wraps the fencing sink's work so that every effect the sink accepted is recorded with the
/// worker and token it came under.
fn recording(worker_id: Uuid, sink: ResultSink, committed: Committed, work: WorkFn) -> WorkFn {
    let fenced = sink.fencing(work);
    Arc::new(move |assignment: Assignment| {
        let (task_id, token) = (assignment.task_id, assignment.token);
        let (fenced, sink, committed) = (Arc::clone(&fenced), sink.clone(), Arc::clone(&committed));
        async move {
            let result = fenced(assignment).await;
            if sink
                .effect(task_id)
                .is_some_and(|effect| effect.token == token)
            {
                committed.lock().unwrap().push((worker_id, task_id, token));
            }
            result
        }
        .boxed()
    })
}

async fn submit(flags: &[String]) {
    let mut args = flags.to_vec();
    args.extend(["--count".to_owned(), TASKS.to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (status, out, err) = Sample::start(env!("CARGO_BIN_EXE_queue-submit"), &args, "warn")
        .finish()
        .await;
    assert!(status.success(), "queue-submit: exit {status}\n{err}");
    let summary: serde_json::Value = serde_json::from_str(out.trim())
        .unwrap_or_else(|e| panic!("queue-submit's stdout is not its summary ({e}):\n{out}"));
    assert_eq!(summary["submitted"], TASKS, "{summary}");
}

async fn verify(flags: &[String]) -> serde_json::Value {
    let mut args = flags.to_vec();
    args.extend(["--lost-after-ms".to_owned(), "0".to_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (_status, out, err) = Sample::start(env!("CARGO_BIN_EXE_queue-verify"), &args, "warn")
        .finish()
        .await;
    serde_json::from_str(out.trim())
        .unwrap_or_else(|e| panic!("queue-verify's stdout is not its report ({e}):\n{out}\n{err}"))
}

async fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A [`Connect`] that hands out clones of one engine's connection factory.
pub fn connect_with<E, F, Fut>(open: F) -> Connect
where
    E: IntoEngine,
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = E> + Send + 'static,
{
    let open = Arc::new(open);
    Arc::new(move || {
        let open = Arc::clone(&open);
        async move { open().await.into_engine() }.boxed()
    })
}
