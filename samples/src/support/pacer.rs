//! [`Pacer`]: how many records are due now, for sending at a fixed rate.
//!
//! Sleeping `1/rate` between sends drifts (each send and each wake-up adds a little) and cannot go
//! faster than the timer's resolution (about a millisecond). Instead the pacer counts: `rate × time
//! since start` records are due; the sender sends what is due, then sleeps a tick. The average rate
//! is exact and high rates are sent in small bursts per tick.
//!
//! After a stall (the broker was down, the producer's buffer was full) the backlog could be large;
//! sending it all at once would be a burst nobody asked for. The pacer lets at most
//! [`MAX_CATCH_UP_MS`] worth of records fall due at once and forgets the rest.

use std::time::Duration;

use tokio::time::Instant;

/// The sender's sleep between two checks of what is due.
pub const TICK_MS: u64 = 10;

/// The largest backlog, in milliseconds' worth of records, the pacer lets fall due at once.
pub const MAX_CATCH_UP_MS: u64 = 1_000;

/// Counts records due at `rate_per_s` (0 = no limit).
#[derive(Debug, Clone)]
pub struct Pacer {
    rate_per_s: u32,
    start: Instant,
    /// Records counted as due before `start` (moves when a backlog is forgotten).
    base: u64,
}

impl Pacer {
    /// A pacer starting now.
    pub fn new(rate_per_s: u32) -> Self {
        Self {
            rate_per_s,
            start: Instant::now(),
            base: 0,
        }
    }

    /// How many records may be sent now, given `sent_so_far`. `None` without a rate limit.
    pub fn due(&mut self, sent_so_far: u64) -> Option<u64> {
        if self.rate_per_s == 0 {
            return None;
        }
        let now = Instant::now();
        let elapsed_ms = now.duration_since(self.start).as_millis() as u64;
        let total_due = self.base + elapsed_ms * u64::from(self.rate_per_s) / 1_000;
        let max_backlog = (MAX_CATCH_UP_MS * u64::from(self.rate_per_s) / 1_000).max(1);
        let backlog = total_due.saturating_sub(sent_so_far);
        if backlog > max_backlog {
            // Forget the excess: restart the count from here.
            self.start = now;
            self.base = sent_so_far + max_backlog;
            return Some(max_backlog);
        }
        Some(backlog)
    }

    /// The sleep between two checks.
    pub fn tick() -> Duration {
        Duration::from_millis(TICK_MS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn records_fall_due_at_the_rate() {
        let mut pacer = Pacer::new(100);
        assert_eq!(pacer.due(0), Some(0));
        tokio::time::advance(Duration::from_millis(250)).await;
        assert_eq!(pacer.due(0), Some(25));
        assert_eq!(pacer.due(25), Some(0));
    }

    #[tokio::test(start_paused = true)]
    async fn a_long_stall_does_not_release_more_than_the_catch_up_limit() {
        let mut pacer = Pacer::new(100);
        tokio::time::advance(Duration::from_mins(1)).await;
        assert_eq!(pacer.due(0), Some(100));
        tokio::time::advance(Duration::from_millis(100)).await;
        assert_eq!(pacer.due(100), Some(10));
    }

    #[test]
    fn no_rate_means_no_limit() {
        assert_eq!(Pacer::new(0).due(1_000_000), None);
    }
}
