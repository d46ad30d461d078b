//! The simulated work every worker of every system does under its lease.

use std::time::Duration;

/// Works for `work_ms`: a sleep, so the worker's core is free meanwhile, as with I/O-bound
/// work. Zero is no work at all, not `sleep(0)`: tokio's timer rounds a deadline up to its
/// next millisecond tick, so a zero sleep parked each worker for up to a millisecond per task
/// — at "0 ms of work" most of a task's cycle, for booblik and the peers alike, and the tasks/s
/// figures measured that timer instead of the queues.
pub async fn work_for(work_ms: u64) {
    if work_ms > 0 {
        tokio::time::sleep(Duration::from_millis(work_ms)).await;
    }
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
