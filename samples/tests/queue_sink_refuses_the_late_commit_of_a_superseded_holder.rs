//! The SPEC's case for fencing: worker A holds a task, is paused past its lease (its followers
//! paused with it), and worker B's claim wins the task. When A wakes up, its own view still says
//! its token is current — so a check against that view passes — but the shared sink has seen B's
//! newer token and refuses A's commit. The pause is simulated deterministically: A's commit waits
//! until B has committed, and A's view is the claims log as it was when A was paused.

use booblik_samples::queue::record::{Claim, ClaimsRecord, Task};
use booblik_samples::queue::state::{QueueConfig, QueueState};
use booblik_samples::queue::worker::{Committed, Refused, ResultSink};
use uuid::Uuid;

const LEASE_MS: u64 = 1_000;
const T0_MS: u64 = 1_700_000_000_000;

fn claim(task_id: Uuid, worker_id: Uuid, claimed_at_ms: u64) -> ClaimsRecord {
    ClaimsRecord::Claim(Claim {
        task_id,
        worker_id,
        claimed_at_ms,
        lease_ms: LEASE_MS,
    })
}

#[tokio::test]
async fn a_holder_that_woke_up_after_its_lease_expired_cannot_commit() {
    let task_id = Uuid::new_v4();
    let (worker_a, worker_b) = (Uuid::new_v4(), Uuid::new_v4());
    let task = Task {
        task_id,
        payload: b"p".to_vec(),
        submitted_at_ms: T0_MS,
    };

    // A's view: the log up to A's winning claim at offset 0 — all A's paused followers saw.
    let mut a_view = QueueState::new(QueueConfig::default());
    a_view.apply_task(0, &task).unwrap();
    a_view
        .apply_claims_record(0, &claim(task_id, worker_a, T0_MS))
        .unwrap();
    let a_token = a_view.lease(task_id).unwrap().token;

    // B's view: A's lease lapsed and B's claim at offset 1 won.
    let mut b_view = a_view.clone();
    b_view
        .apply_claims_record(1, &claim(task_id, worker_b, T0_MS + 2 * LEASE_MS))
        .unwrap();
    let b_token = b_view.lease(task_id).unwrap().token;
    assert!(b_token > a_token);

    let sink = ResultSink::new();
    let (b_committed, a_wakes_up) = tokio::sync::oneshot::channel::<()>();

    let a_sink = sink.clone();
    let worker_a_task = tokio::spawn(async move {
        a_wakes_up.await.expect("B commits");
        // Check-then-act on the stale view: it says A's token is still the current lease.
        assert_eq!(
            a_view.lease(task_id).map(|lease| lease.token),
            Some(a_token)
        );
        a_sink.commit(task_id, a_token, b"A's late effect".to_vec())
    });

    let b_sink = sink.clone();
    b_sink
        .commit(task_id, b_token, b"B's effect".to_vec())
        .expect("the current holder's effect is accepted");
    b_committed.send(()).unwrap();

    let late = worker_a_task.await.unwrap();
    assert_eq!(
        late,
        Err(Refused::StaleToken {
            task_id,
            token: a_token,
            highest_token: b_token
        })
    );
    assert_eq!(
        sink.effect(task_id),
        Some(Committed {
            token: b_token,
            effect: b"B's effect".to_vec()
        })
    );
    assert_eq!(sink.refused(), 1);
}
