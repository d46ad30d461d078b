//! A done stops being pending as soon as its append is acknowledged, before the worker has read
//! its verdict: a worker stopped while it waits for that verdict does not append the done again
//! on its way out. (A repeat would be harmless by the verdict rules, but it is a record the log
//! did not need, and a stop racing every done would write each one twice.)

mod queue_worker_support;

use booblik_samples::queue::record::ClaimsRecord;
use booblik_samples::queue::worker::{WorkerEvent, read_logs};
use queue_worker_support::{
    EmbeddedBroker, TEST_DEADLINE, WatchingProxy, quick_config, start_working_on_one_task,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_stopped_before_its_done_s_verdict_appends_the_done_once() {
    let broker = EmbeddedBroker::start().await;
    let proxy = WatchingProxy::start(broker.addr()).await;
    let submitter = broker.client().await;
    let mut working = start_working_on_one_task(
        &submitter,
        proxy.client().await,
        quick_config(5_000, 500),
        b"only",
    )
    .await;
    // The worker's claims follower hears nothing from now on: the done about to be appended is
    // acknowledged, but its verdict never arrives.
    proxy.hold_claims_reads();
    let done_offset = tokio::time::timeout(TEST_DEADLINE, async {
        loop {
            let event = working.events.recv().await;
            if let WorkerEvent::DoneAppended { offset, .. } =
                event.expect("the worker reports its steps")
            {
                break offset;
            }
        }
    })
    .await
    .expect("the done is appended");

    let stats = working.running.stop().await;
    assert_eq!(stats.completed, 0, "the verdict was never read");

    let (_, claims) = read_logs(submitter.clone(), "tasks", "claims")
        .await
        .unwrap();
    let dones: Vec<i64> = claims
        .iter()
        .filter_map(|(offset, record)| match record {
            ClaimsRecord::Done(done) if done.task_id == working.task_id => Some(*offset),
            _ => None,
        })
        .collect();
    assert_eq!(dones, vec![done_offset], "one done, the acknowledged one");
}
