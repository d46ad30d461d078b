//! Which workers are live, as the claims log says — for [`Pick::Rendezvous`](crate::queue::pick::Pick),
//! which ranks each task over the workers that could claim it.
//!
//! *Live* is defined from the log, so that every reader agrees without a clock of its own: a
//! worker is live at `now_ms` while its last record of any kind is younger than the lease that
//! record states (a claim's, an extend's or a heartbeat's `lease_ms`; a done or a release counts
//! with the last lease the worker stated). Idle workers write a heartbeat every lease / 2
//! (`worker/run.rs`), busy ones extend every lease / 3, so a running worker never lapses; a
//! heartbeat with `lease_ms = 0`, written at a clean shutdown, makes its writer not live at once.
//!
//! A worker is *idle* at `now_ms` if it is live and holds no lease that is live at `now_ms`:
//! those are the workers that will claim next, so the ones a task's rank is taken over.
//!
//! A stated lease counts only up to [`QueueConfig::max_lease_ms`](super::QueueConfig): the verdict
//! voids a claim that asks for more, and its writer must not look live (and idle, so ranked
//! first for tasks) for a lease nobody gave it.
//!
//! Workers that stopped are forgotten once their last record is [`FORGET_AFTER_MS`] older than
//! the newest record seen, so a pick's cost follows the workers that are around, not every worker
//! that ever wrote (a long-lived queue sees thousands of restarts). A forgotten worker that writes
//! again is noted again.
//!
//! Liveness only guides picking; no verdict depends on it. Readers that disagree about it (a
//! worker that has read further) make different picks, never different verdicts.

use std::collections::HashMap;

use uuid::Uuid;

use super::event::Event;
use crate::queue::record::ClaimsRecord;

/// What the log says about one worker. (Every field is a time in ms: the units say so.)
#[allow(clippy::struct_field_names)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Seen {
    /// Its last record's timestamp plus the lease it stated.
    live_until_ms: u64,
    /// The last lease it stated (for records that state none).
    lease_ms: u64,
    /// Expiry of the lease it holds, 0 if none.
    holds_until_ms: u64,
}

/// A worker not live for this long by the newest record's timestamp is forgotten. Longer than any
/// clock skew between writers worth tolerating (a skew beyond a lease already breaks the
/// protocol's promise, `worker/run.rs`), so a worker is never forgotten while it may be live.
pub const FORGET_AFTER_MS: u64 = 60_000;

/// Fewest workers remembered before a sweep for stopped ones is worth its pass.
const MIN_SWEEP_WORKERS: usize = 64;

/// The workers that wrote to the claims log recently, with when each stops counting as live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Liveness {
    workers: HashMap<Uuid, Seen>,
    /// The newest record timestamp seen: the log's own "now", for forgetting.
    newest_ms: u64,
    /// Sweep for stopped workers when this many are remembered (twice the survivors of the last
    /// sweep): amortised O(1) per record.
    sweep_at: usize,
}

impl Default for Liveness {
    fn default() -> Self {
        Self {
            workers: HashMap::new(),
            newest_ms: 0,
            sweep_at: MIN_SWEEP_WORKERS,
        }
    }
}

impl Liveness {
    /// Notes `record` and the verdict on it; returns until when its writer is live. A stated
    /// lease counts up to `max_lease_ms`.
    pub(super) fn note(&mut self, record: &ClaimsRecord, event: &Event, max_lease_ms: u64) -> u64 {
        self.newest_ms = self.newest_ms.max(record.written_at_ms());
        if self.workers.len() >= self.sweep_at {
            self.forget_stopped();
        }
        let seen = self.workers.entry(record.worker_id()).or_default();
        if let Some(lease_ms) = record.lease_ms() {
            seen.lease_ms = lease_ms.min(max_lease_ms);
        }
        seen.live_until_ms = record.written_at_ms().saturating_add(seen.lease_ms);
        match event {
            Event::ClaimWon { expires_at_ms, .. } | Event::Extended { expires_at_ms, .. } => {
                seen.holds_until_ms = *expires_at_ms;
            }
            Event::DoneAccepted { .. } | Event::Released { .. } => seen.holds_until_ms = 0,
            _ => {}
        }
        seen.live_until_ms
    }

    /// Forgets the workers not live for [`FORGET_AFTER_MS`] by the newest record.
    fn forget_stopped(&mut self) {
        let horizon_ms = self.newest_ms.saturating_sub(FORGET_AFTER_MS);
        self.workers
            .retain(|_, seen| seen.live_until_ms.max(seen.holds_until_ms) > horizon_ms);
        self.sweep_at = (2 * self.workers.len()).max(MIN_SWEEP_WORKERS);
    }

    /// How many workers are remembered (live or recently so).
    #[cfg(test)]
    fn remembered(&self) -> usize {
        self.workers.len()
    }

    /// The workers live at `now_ms`, in no particular order. O(workers remembered).
    pub(super) fn live_at(&self, now_ms: u64) -> impl Iterator<Item = Uuid> + '_ {
        self.workers
            .iter()
            .filter(move |(_, seen)| now_ms < seen.live_until_ms)
            .map(|(&worker_id, _)| worker_id)
    }

    /// The workers live at `now_ms` that hold no lease live at `now_ms`.
    pub(super) fn idle_at(&self, now_ms: u64) -> impl Iterator<Item = Uuid> + '_ {
        self.workers
            .iter()
            .filter(move |(_, seen)| now_ms < seen.live_until_ms && seen.holds_until_ms <= now_ms)
            .map(|(&worker_id, _)| worker_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::record::{Claim, Heartbeat};
    use crate::queue::state::{QueueConfig, QueueState};

    const T0_MS: u64 = 1_700_000_000_000;

    fn worker(n: u128) -> Uuid {
        Uuid::from_u128(0xAAAA_0000 + n)
    }

    #[test]
    fn a_void_claim_s_too_long_lease_does_not_keep_its_writer_live() {
        let config = QueueConfig {
            max_lease_ms: 10_000,
            ..QueueConfig::default()
        };
        let mut state = QueueState::new(config);
        let greedy = Claim {
            task_id: Uuid::from_u128(1),
            worker_id: worker(1),
            claimed_at_ms: T0_MS,
            lease_ms: 1_000_000,
        };
        state.apply_claims_record(0, &greedy.into()).unwrap();
        assert_eq!(state.live_workers(T0_MS + 9_999), vec![worker(1)]);
        // Live only for the longest lease anyone may be given, not the one it asked for.
        assert!(state.live_workers(T0_MS + 10_000).is_empty());
    }

    #[test]
    fn workers_that_stopped_long_ago_are_forgotten_and_live_ones_kept() {
        let mut liveness = Liveness::default();
        let heartbeat = |n: u128, at_ms: u64| -> ClaimsRecord {
            Heartbeat {
                worker_id: worker(n),
                at_ms,
                lease_ms: 1_000,
            }
            .into()
        };
        let event = |n: u128| Event::Heartbeat {
            worker_id: worker(n),
            live_until_ms: 0,
        };
        // 1 000 short-lived workers, one after another, each writing once.
        for n in 0..1_000_u128 {
            let at_ms = T0_MS + u64::try_from(n).unwrap() * 1_000;
            liveness.note(&heartbeat(n, at_ms), &event(n), u64::MAX);
        }
        // Only those within FORGET_AFTER_MS of the newest (plus a sweep's slack) remain.
        let newest_ms = T0_MS + 999 * 1_000;
        assert!(
            liveness.remembered() <= 2 * usize::try_from(FORGET_AFTER_MS / 1_000).unwrap() + 2,
            "{} workers remembered",
            liveness.remembered()
        );
        assert_eq!(
            liveness.live_at(newest_ms).collect::<Vec<_>>(),
            vec![worker(999)]
        );
        // A forgotten worker that writes again is live again.
        liveness.note(&heartbeat(0, newest_ms), &event(0), u64::MAX);
        assert!(liveness.live_at(newest_ms).any(|id| id == worker(0)));
    }
}
