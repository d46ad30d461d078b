//! A worker that has finished a task holds its done until an append of it is acknowledged (it
//! rides with the next claim). If the worker is stopped while that batch is unanswered, it
//! appends the done alone before it stops: a committed effect's done is never left to the lease,
//! which would run the task again.

mod queue_worker_support;

use booblik_samples::queue::record::ClaimsRecord;
use booblik_samples::queue::worker::read_logs;
use queue_worker_support::{wait_until, working_on_the_first_of_two_tasks};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_worker_appends_the_done_whose_batch_was_never_answered() {
    // Holds the broker for the whole test.
    let first = working_on_the_first_of_two_tasks().await;
    let (proxy, working) = (&first.proxy, first.working);
    // The batch [done of the first, claim of the second] reaches the proxy and is dropped there:
    // never appended, never answered. The worker is stopped while it waits for that answer.
    proxy.swallow_next_claims_produce();
    wait_until(
        "the done and the next claim were sent as one batch",
        || async { proxy.seen().claims_batches().contains(&2) },
    )
    .await;

    let stats = working.running.stop().await;

    let (_, claims) = read_logs(first.submitter.clone(), "tasks", "claims")
        .await
        .unwrap();
    let dones: Vec<_> = claims
        .iter()
        .filter_map(|(_, record)| match record {
            ClaimsRecord::Done(done) => Some((done.task_id, done.worker_id, done.token)),
            _ => None,
        })
        .collect();
    // The stop's append may be repeated (the swallowed request's missing answer makes the
    // client drop the connection when the next answer comes, and the worker appends again):
    // a repeated done is harmless by the verdict rules. Without the stop's append there is none.
    assert!(!dones.is_empty(), "the first task's done reached the log");
    assert!(
        dones
            .iter()
            .all(|done| *done == (working.task_id, working.worker_id, working.token)),
        "every done is the first task's, under its lease: {dones:?}"
    );
    assert!(
        !claims.iter().any(|(_, record)| matches!(record, ClaimsRecord::Claim(claim) if claim.task_id != working.task_id)),
        "the swallowed claim of the second task never reached the log"
    );
    assert_eq!(stats.completed, 1, "the done's verdict was read: completed");
}
