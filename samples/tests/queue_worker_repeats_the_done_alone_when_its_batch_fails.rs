//! When the append that carries a finished task's done and the next claim fails, the fate of
//! both is unknown. The worker appends the done alone at once, before it backs off and picks
//! again, so the finished task is closed without waiting for the next claim to get through.

mod queue_worker_support;

use booblik_samples::queue::record::ClaimsRecord;
use booblik_samples::queue::worker::read_logs;
use queue_worker_support::{wait_until, working_on_the_first_of_two_tasks};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_done_of_a_failed_batch_is_appended_alone_before_the_next_claim() {
    // Holds the broker for the whole test.
    let first = working_on_the_first_of_two_tasks().await;
    let (proxy, working) = (&first.proxy, first.working);
    // The batch [done of the first, claim of the second] closes the worker's connection.
    proxy.cut_next_claims_produce();
    wait_until("both tasks are completed", || async {
        working.running.worker.stats().completed == 2
    })
    .await;
    working.running.stop().await;

    // claim 1 | done 1 + claim 2, cut | done 1 alone | claim 2 | done 2
    assert_eq!(proxy.seen().claims_batches(), vec![1, 2, 1, 1, 1]);

    let (_, claims) = read_logs(first.submitter.clone(), "tasks", "claims")
        .await
        .unwrap();
    let kinds: Vec<(&str, bool)> = claims
        .iter()
        .map(|(_, record)| match record {
            ClaimsRecord::Claim(claim) => ("claim", claim.task_id == working.task_id),
            ClaimsRecord::Done(done) => ("done", done.task_id == working.task_id),
            _ => ("other", false),
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("claim", true),
            ("done", true),
            ("claim", false),
            ("done", false)
        ],
        "the cut batch reached nothing; the first done went alone, before the second claim"
    );
}
