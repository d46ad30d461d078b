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

/// The default work: [`work_for`] `work_ms`, then returns [`result_of`] the payload.
pub fn simulated_work(work_ms: u64) -> WorkFn {
    Arc::new(move |assignment: Assignment| {
        async move {
            work_for(work_ms).await;
            result_of(&assignment.payload)
        }
        .boxed()
    })
}

/// Simulated work of `work_ms`: a sleep, so the worker's core is free meanwhile, as with
/// I/O-bound work. Zero is no work at all, not `sleep(0)`: tokio's timer rounds a deadline up
/// to its next millisecond tick, so a zero sleep would park the worker for up to a millisecond
/// per task (the load harness's "0 ms of work" measured that timer until it stopped doing so).
pub async fn work_for(work_ms: u64) {
    if work_ms > 0 {
        tokio::time::sleep(Duration::from_millis(work_ms)).await;
    }
}

/// The simulated result of a task: the CRC-32C of its payload, big-endian. Deterministic, so a
/// test (or a person) can check a result against the task it claims to be for.
pub fn result_of(payload: &[u8]) -> Vec<u8> {
    booblik_protocol::crc32c(payload).to_be_bytes().to_vec()
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;

    use super::*;

    #[tokio::test]
    async fn no_work_is_done_at_its_first_poll_without_the_timer() {
        // A zero sleep would be pending here, registered with the timer for its next tick.
        assert_eq!(work_for(0).now_or_never(), Some(()));
    }

    #[tokio::test(start_paused = true)]
    async fn work_takes_its_milliseconds() {
        let before = tokio::time::Instant::now();
        work_for(5).await;
        assert!(tokio::time::Instant::now() - before >= Duration::from_millis(5));
    }
}
