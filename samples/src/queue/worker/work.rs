//! What a worker does once it holds a lease: a work function.
//!
//! The sample's default work is simulated — sleep `work_ms`, then return a hash of the payload —
//! because the queue, not the work, is the subject. A real worker passes its own
//! [`WorkFn`] to [`Worker::start_with_work`](super::Worker::start_with_work). The function
//! must not commit external effects unfenced: pass [`Assignment::token`] to a receiver that
//! refuses older tokens, shared by every worker (see [`ResultSink`](super::ResultSink) and "A
//! fencing sink for effects" in `docs/task-queue.md`).

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use uuid::Uuid;

use super::view::StateView;

/// Everything a work function gets: the task, the lease it runs under, and a view of the queue
/// to check that lease against.
#[derive(Debug, Clone)]
pub struct Assignment {
    /// The task.
    pub task_id: Uuid,
    /// The lease's fencing token: pass it along with every effect.
    pub token: i64,
    /// The task's input.
    pub payload: Vec<u8>,
    /// The worker's live view of the queue. Not a lease check: see [`StateView`].
    pub view: StateView,
}

/// A work function: runs one task and returns its result (the bytes written into `done`).
/// The worker drops the future if the lease is lost or the worker shuts down, so it should hold
/// no state that must be cleaned up by hand.
pub type WorkFn = Arc<dyn Fn(Assignment) -> BoxFuture<'static, Vec<u8>> + Send + Sync>;

/// The default work: sleeps `work_ms` (not at all for 0), then returns [`result_of`] the payload.
pub fn simulated_work(work_ms: u64) -> WorkFn {
    Arc::new(move |assignment: Assignment| {
        async move {
            // A zero sleep is not free: tokio rounds a deadline up to its next millisecond tick.
            if work_ms > 0 {
                tokio::time::sleep(Duration::from_millis(work_ms)).await;
            }
            result_of(&assignment.payload)
        }
        .boxed()
    })
}

/// The simulated result of a task: the CRC-32C of its payload, big-endian. Deterministic, so a
/// test (or a person) can check a result against the task it claims to be for.
pub fn result_of(payload: &[u8]) -> Vec<u8> {
    booblik_protocol::crc32c(payload).to_be_bytes().to_vec()
}
