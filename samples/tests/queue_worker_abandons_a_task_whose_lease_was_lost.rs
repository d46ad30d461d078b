//! A worker whose lease is taken over while it works learns it from its next extend (void) and
//! abandons the task: it writes no done under the lost token and reports the loss.

mod queue_worker_support;

use booblik_samples::queue::record::{Claim, ClaimsRecord};
use booblik_samples::queue::worker::{read_logs, wall_clock_ms};
use queue_worker_support::{
    EmbeddedBroker, WorkingWorker, append_claims_record, assert_lease_lost_without_done,
    assert_no_done_by, quick_config, start_working_on_one_task, wait_until,
};
use uuid::Uuid;

const LEASE_MS: u64 = 600;
/// Far longer than the test: the worker can only stop working by losing the lease.
const WORK_MS: u64 = 60_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_void_extend_stops_the_work_without_a_done() {
    let broker = EmbeddedBroker::start().await;
    let submitter = broker.client().await;
    let WorkingWorker {
        running,
        worker_id,
        mut events,
        task_id,
        token,
    } = start_working_on_one_task(
        &submitter,
        broker.client().await,
        quick_config(LEASE_MS, WORK_MS),
        b"contested",
    )
    .await;

    // A writer whose clock runs far ahead: by its timestamp the lease has lapsed, so its claim
    // wins and the worker's token is no longer current.
    let usurper = Uuid::new_v4();
    let usurping_claim = ClaimsRecord::Claim(Claim {
        task_id,
        worker_id: usurper,
        claimed_at_ms: wall_clock_ms() + 100 * LEASE_MS,
        lease_ms: LEASE_MS,
    });
    let usurper_token = append_claims_record(&submitter, &usurping_claim).await;

    wait_until("the worker has noticed", || async {
        running.worker.stats().leases_lost == 1
    })
    .await;
    wait_until("the worker has stopped working", || async {
        running.worker.current_task().is_none()
    })
    .await;
    let stats = running.stop().await;
    assert_eq!(stats.completed, 0);
    assert_eq!(stats.wins, 1);

    assert_lease_lost_without_done(&mut events, task_id, token);

    let (_, claims) = read_logs(&submitter, "tasks", "claims").await.unwrap();
    assert_no_done_by(&claims, worker_id);
    assert!(
        claims.iter().any(|(_, record)| matches!(
            record,
            ClaimsRecord::Extend(extend) if extend.token == token && extend.worker_id == worker_id
        )),
        "the loss was learnt from an extend"
    );
    assert!(usurper_token > token);
}
