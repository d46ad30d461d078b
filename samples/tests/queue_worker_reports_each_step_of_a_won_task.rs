//! A worker that wins a task reports, in order: the claim appended at an offset, the verdict on
//! that offset, work started under that offset as its token, and the done under that token —
//! and the result it commits is the result of the task's payload.

mod queue_worker_support;

use booblik_samples::queue::record::ClaimsRecord;
use booblik_samples::queue::verify::{VerifyConfig, verify};
use booblik_samples::queue::worker::{
    Worker, WorkerEvent, read_logs, result_of, submit_task, wall_clock_ms,
};
use queue_worker_support::{EmbeddedBroker, RunningWorker, quick_config, wait_until};

const TASKS: usize = 2;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_won_task_goes_claim_verdict_work_done_under_the_claim_offset_as_token() {
    let broker = EmbeddedBroker::start().await;
    let submitter = broker.client().await;
    let mut submitted = Vec::new();
    for n in 0..TASKS {
        submitted.push(
            submit_task(&submitter, "tasks", vec![b'p', n as u8])
                .await
                .unwrap(),
        );
    }

    let mut worker = Worker::start(broker.client().await, quick_config(1_000, 50))
        .await
        .unwrap();
    let worker_id = worker.worker_id();
    let mut events = worker.events().expect("the first call returns the stream");
    assert!(worker.events().is_none(), "the stream is handed out once");
    let running = RunningWorker::spawn(worker);
    wait_until("both tasks are completed", || async {
        running.worker.stats().completed == TASKS as u64
    })
    .await;
    let stats = running.stop().await;
    assert_eq!(stats.claims, TASKS as u64);
    assert_eq!(stats.wins, TASKS as u64);
    assert_eq!(stats.lost_races, 0);
    assert_eq!(stats.completed, TASKS as u64);

    let mut seen = Vec::new();
    while let Ok(event) = events.try_recv() {
        seen.push(event);
    }
    assert_eq!(seen.len(), 4 * TASKS, "four events per task: {seen:#?}");
    for steps in seen.chunks(4) {
        let [
            WorkerEvent::ClaimAppended { task_id, offset },
            WorkerEvent::VerdictKnown {
                task_id: verdict_task,
                offset: verdict_offset,
                won: true,
                ..
            },
            WorkerEvent::WorkStarted {
                task_id: work_task,
                token,
            },
            WorkerEvent::DoneAppended {
                task_id: done_task,
                token: done_token,
                offset: done_offset,
            },
        ] = steps
        else {
            panic!("unexpected sequence: {steps:#?}");
        };
        assert!(submitted.iter().any(|(id, _)| id == task_id));
        assert_eq!(
            (verdict_task, work_task, done_task),
            (task_id, task_id, task_id)
        );
        assert_eq!(verdict_offset, offset);
        assert_eq!(token, offset, "the winning claim's offset is the token");
        assert_eq!(done_token, token);
        assert!(done_offset > offset);
    }

    let (tasks, claims) = read_logs(&submitter, "tasks", "claims").await.unwrap();
    for (offset, record) in &claims {
        let ClaimsRecord::Done(done) = record else {
            continue;
        };
        assert_eq!(done.worker_id, worker_id);
        let (_, task) = tasks
            .iter()
            .find(|(_, task)| task.task_id == done.task_id)
            .expect("the done names a submitted task");
        assert_eq!(
            done.result,
            result_of(&task.payload),
            "result at offset {offset}"
        );
    }
    let report = verify(&tasks, &claims, &VerifyConfig::drained_at(wall_clock_ms()));
    assert!(report.is_clean(), "{:#?}", report.violations);
    assert_eq!(report.summary.completed, TASKS as u64);
}
