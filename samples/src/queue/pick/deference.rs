//! How long a rendezvous worker leaves a task to the worker that ranks first for it.
//!
//! A [`Ranked`] pick that is not the worker's own names a task some other idle worker owns. The
//! owner is probably about to claim it (it sees the same task in the same log), so claiming it
//! too would only lose a race. But the owner may be slow or gone, so the wait is bounded: after
//! `max_deference_ms` of deferring to the *same* task the worker claims it anyway.
//!
//! The clock restarts whenever there is nothing to defer to: when the pick was the worker's own,
//! when nothing was claimable (the owner took the task, which is the point), or when the pick
//! names a different task than the one deferred to (the owner of the old one took it). An
//! earlier version kept one clock per idle spell and reset it only on a claim, so in a trickle
//! each new task found the clock long expired and every idle worker claimed at once: 80 % lost
//! races at 30 workers.
//!
//! Times are milliseconds on any monotonic clock the caller chooses (the worker's `Instant`
//! since it started; a round counter in a simulation), so the rule is tested without timers.

use uuid::Uuid;

use super::Ranked;

/// What the worker should do with a pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Claim the picked task now.
    Claim,
    /// Leave the task to its owner for up to this long, then look again.
    Wait {
        /// Time left of the deference to this task.
        wait_ms: u64,
    },
}

/// One worker's deference to other workers' tasks (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deference {
    max_deference_ms: u64,
    /// The task deferred to and since when.
    deferring: Option<(Uuid, u64)>,
}

impl Deference {
    /// A worker that defers at most `max_deference_ms` to one task.
    pub fn new(max_deference_ms: u64) -> Self {
        Self {
            max_deference_ms,
            deferring: None,
        }
    }

    /// What to do with `ranked` at `now_ms`.
    pub fn decide(&mut self, ranked: &Ranked, now_ms: u64) -> Decision {
        if ranked.ranked_first {
            self.deferring = None;
            return Decision::Claim;
        }
        let since_ms = match self.deferring {
            Some((task_id, since_ms)) if task_id == ranked.task_id => since_ms,
            _ => {
                self.deferring = Some((ranked.task_id, now_ms));
                now_ms
            }
        };
        let deferred_ms = now_ms.saturating_sub(since_ms);
        if deferred_ms < self.max_deference_ms {
            Decision::Wait {
                wait_ms: self.max_deference_ms - deferred_ms,
            }
        } else {
            self.deferring = None;
            Decision::Claim
        }
    }

    /// Nothing was claimable: whoever the worker deferred to has taken the task.
    pub fn nothing_claimable(&mut self) {
        self.deferring = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX_MS: u64 = 25;

    fn theirs(n: u128) -> Ranked {
        Ranked {
            task_id: Uuid::from_u128(n),
            ranked_first: false,
        }
    }

    #[test]
    fn an_own_task_is_claimed_at_once() {
        let mine = Ranked {
            task_id: Uuid::from_u128(1),
            ranked_first: true,
        };
        assert_eq!(Deference::new(MAX_MS).decide(&mine, 0), Decision::Claim);
    }

    #[test]
    fn another_worker_s_task_is_left_to_it_for_the_bounded_time_then_claimed() {
        let mut deference = Deference::new(MAX_MS);
        assert_eq!(
            deference.decide(&theirs(1), 100),
            Decision::Wait { wait_ms: 25 }
        );
        assert_eq!(
            deference.decide(&theirs(1), 110),
            Decision::Wait { wait_ms: 15 }
        );
        assert_eq!(deference.decide(&theirs(1), 125), Decision::Claim);
    }

    #[test]
    fn the_clock_restarts_after_nothing_was_claimable() {
        let mut deference = Deference::new(MAX_MS);
        deference.decide(&theirs(1), 100);
        deference.nothing_claimable();
        // The next task arrives long after the first deference began: a full wait again.
        assert_eq!(
            deference.decide(&theirs(1), 200),
            Decision::Wait { wait_ms: 25 }
        );
    }

    #[test]
    fn the_clock_restarts_for_a_different_task() {
        let mut deference = Deference::new(MAX_MS);
        deference.decide(&theirs(1), 100);
        assert_eq!(
            deference.decide(&theirs(2), 120),
            Decision::Wait { wait_ms: 25 }
        );
    }
}
