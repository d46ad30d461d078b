//! The demo's fencing scene as a test: worker A runs on a thread of its own and its work blocks
//! that thread for 3 × its lease once it has a result (the demo freezes for 1.5 ×; the test leaves
//! a slow machine more room for B to take over meanwhile) (`Freeze`), so neither its extends nor
//! its local-deadline timer run. Its lease lapses in the log, worker B claims the task, fences
//! the shared sink when its work starts (`ResultSink::fencing`) and commits. When A's thread
//! wakes, its effect is refused by the sink and its done is fenced by the claims log: the task's
//! effect is B's, under B's token, and the sink counts exactly one refusal.

mod queue_worker_support;

use booblik_client::ConnectionConfig;
use booblik_samples::queue::state::{Event, QueueConfig, QueueState};
use booblik_samples::queue::worker::{
    Freeze, ResultSink, Worker, read_logs, result_of, simulated_work, spawn_on_own_thread,
    submit_task,
};
use queue_worker_support::{EmbeddedBroker, RunningWorker, quick_config, wait_until};

const LEASE_MS: u64 = 600;
const WORK_MS: u64 = 50;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_worker_s_late_effect_is_refused_by_the_fenced_sink() {
    let broker = EmbeddedBroker::start().await;
    let submitter = broker.client().await;
    let sink = ResultSink::new();
    let freeze = Freeze::once(LEASE_MS * 3).unwrap();

    // A alone first, so that it wins the task.
    let (stop_a, stopped_a) = tokio::sync::oneshot::channel::<()>();
    let a = spawn_on_own_thread(
        broker.addr(),
        ConnectionConfig::default(),
        quick_config(LEASE_MS, WORK_MS),
        sink.fencing(freeze.wrap("A", simulated_work(WORK_MS))),
        async move {
            let _ = stopped_a.await;
        },
    )
    .await
    .unwrap();
    let (task_id, _) = submit_task(&submitter, "tasks", b"payload".to_vec())
        .await
        .unwrap();
    wait_until("A froze holding the task", || async {
        freeze.frozen().is_some()
    })
    .await;
    let frozen = freeze.frozen().unwrap();
    assert_eq!(frozen.task_id, task_id);

    // B, an ordinary worker, takes the task over once A's lease lapses in the log.
    let b = Worker::start_with_work(
        broker.client().await,
        quick_config(LEASE_MS, WORK_MS),
        sink.fencing(simulated_work(WORK_MS)),
    )
    .await
    .unwrap();
    let b = RunningWorker::spawn(b);
    wait_until("A woke and its done was judged", || async {
        a.worker().stats().leases_lost == 1
    })
    .await;

    let held = sink.effect(task_id).expect("the task has an effect");
    assert!(
        held.token > frozen.token,
        "the effect is the new holder's (token {}), not A's (token {})",
        held.token,
        frozen.token
    );
    assert_eq!(held.effect, result_of(b"payload"));
    assert_eq!(
        sink.refused(),
        1,
        "A's late effect, and only it, was refused"
    );
    assert_eq!(b.stop().await.completed, 1);
    let _ = stop_a.send(());
    let a_stats = a.join().await.unwrap();
    assert_eq!((a_stats.completed, a_stats.leases_lost), (0, 1));

    // The claims log agrees: A's done under its old token was fenced.
    let (tasks, claims) = read_logs(&submitter, "tasks", "claims").await.unwrap();
    let mut state = QueueState::new(QueueConfig::default());
    for (offset, task) in &tasks {
        state.apply_task(*offset, task).unwrap();
    }
    let mut fenced = 0;
    for (offset, record) in &claims {
        if let Event::DoneFenced { token, .. } = state.apply_claims_record(*offset, record).unwrap()
        {
            assert_eq!(token, frozen.token);
            fenced += 1;
        }
    }
    assert_eq!(fenced, 1);
}
