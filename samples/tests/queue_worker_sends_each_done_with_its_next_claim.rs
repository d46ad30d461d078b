//! A worker that finishes a task and has another to claim appends the done and the next claim
//! as one batch: one round trip and one fsync for both (`WorkerConfig::done_with_next_claim`).
//! The last done, with nothing left to claim, goes alone at once. With the option off, every
//! done is an append of its own.

mod queue_worker_support;

use booblik_samples::queue::record::ClaimsRecord;
use booblik_samples::queue::worker::{WorkerConfig, read_logs};
use queue_worker_support::{quick_config, run_one_worker_through_a_proxy};

const TASKS: u64 = 3;

/// Runs one worker with `config` through a proxy until it completes every task; returns the
/// record count of each of its appends to `claims`, and the kinds of the claims log's records.
async fn claims_batches_of_a_worker(config: WorkerConfig) -> (Vec<usize>, Vec<&'static str>) {
    let (seen, submitter, _broker) = run_one_worker_through_a_proxy(config, TASKS).await;
    let batches = seen.claims_batches();
    let (_, claims) = read_logs(submitter, "tasks", "claims").await.unwrap();
    let kinds = claims
        .iter()
        .map(|(_, record)| match record {
            ClaimsRecord::Claim(_) => "claim",
            ClaimsRecord::Done(_) => "done",
            _ => "other",
        })
        .collect();
    (batches, kinds)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_done_and_the_next_claim_are_one_append() {
    let (batches, kinds) = claims_batches_of_a_worker(quick_config(1_000, 20)).await;
    // claim 1 | done 1 + claim 2 | done 2 + claim 3 | done 3
    assert_eq!(batches, vec![1, 2, 2, 1]);
    // Each done is in the log before the claim that rode with it.
    assert_eq!(
        kinds,
        vec!["claim", "done", "claim", "done", "claim", "done"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_option_off_every_done_is_an_append_of_its_own() {
    let config = WorkerConfig {
        done_with_next_claim: false,
        ..quick_config(1_000, 20)
    };
    let (batches, kinds) = claims_batches_of_a_worker(config).await;
    assert_eq!(batches, vec![1; 2 * TASKS as usize]);
    assert_eq!(
        kinds,
        vec!["claim", "done", "claim", "done", "claim", "done"]
    );
}
