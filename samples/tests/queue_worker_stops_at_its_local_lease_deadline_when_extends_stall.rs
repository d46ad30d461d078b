//! A worker whose extends cannot be appended (its appends hang: no verdict, void or otherwise,
//! ever comes back) stops working at its own local lease deadline and reports the lease lost,
//! instead of working on past a lease the log has let lapse.

mod queue_worker_support;

use booblik_samples::queue::worker::read_logs;
use queue_worker_support::{
    EmbeddedBroker, WatchingProxy, WorkingWorker, assert_lease_lost_without_done,
    assert_no_done_by, quick_config, start_working_on_one_task, wait_until,
};

const LEASE_MS: u64 = 900;
/// Far longer than the test: the worker can only stop working by giving the lease up.
const WORK_MS: u64 = 60_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_whose_extends_stall_gives_the_lease_up_by_its_own_clock() {
    let broker = EmbeddedBroker::start().await;
    let proxy = WatchingProxy::start(broker.addr()).await;
    let submitter = broker.client().await;
    let WorkingWorker {
        running,
        worker_id,
        mut events,
        task_id,
        token,
    } = start_working_on_one_task(
        &submitter,
        proxy.client().await,
        quick_config(LEASE_MS, WORK_MS),
        b"stalled",
    )
    .await;

    proxy.stall_produces();
    wait_until("the worker has stopped working", || async {
        running.worker.current_task().is_none()
    })
    .await;
    assert_eq!(running.worker.stats().leases_lost, 1);
    assert_eq!(running.worker.stats().completed, 0);

    assert_lease_lost_without_done(&mut events, task_id, token);

    let (_, claims) = read_logs(&submitter, "tasks", "claims").await.unwrap();
    assert_no_done_by(&claims, worker_id);
    // The worker's run is left to end with the test's runtime: its next append would hang too.
    running.handle.abort();
}
