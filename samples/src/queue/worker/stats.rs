//! [`WorkerStats`]: a worker's running totals, counted where they happen and read as a snapshot.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

/// What one worker has done so far. Sums over all workers of `claims`, `wins` and `lost_races`
/// match the verifier's [`Summary`](crate::queue::verify::Summary) of the claims log (for claims
/// whose verdict the worker learnt).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerStats {
    /// Claims appended (acknowledged).
    pub claims: u64,
    /// Claims that won a lease.
    pub wins: u64,
    /// Claims that did not win: someone held a live lease, the task was finished, or the claim
    /// dead-lettered it.
    pub lost_races: u64,
    /// Tasks whose done was accepted.
    pub completed: u64,
    /// Leases lost while working: a void extend or the local lease deadline passed (work
    /// abandoned), or a fenced done.
    pub leases_lost: u64,
    /// Extends that renewed a lease, as far as the worker learnt: an extend still in flight when
    /// the work finished is dropped unread (the log may count one more per task).
    pub extends: u64,
    /// Leases handed back by a release at a clean shutdown, as far as the worker learnt (the
    /// verdict said `Released`).
    #[serde(default)]
    pub releases: u64,
    /// Times the worker found nothing claimable and waited for the logs to move or a lease to
    /// lapse. A worker that busy-looped would count thousands per second.
    pub idle_waits: u64,
    /// Events dropped because the receiver of [`Worker::events`](super::Worker::events) had
    /// [`MAX_QUEUED_EVENTS`](super::MAX_QUEUED_EVENTS) unread: a slow observer loses events, it
    /// never grows the worker's memory or slows the worker down.
    pub events_dropped: u64,
}

/// The counters behind [`WorkerStats`], updated without a lock.
#[derive(Debug, Default)]
pub(crate) struct StatsCells {
    pub(crate) claims: AtomicU64,
    pub(crate) wins: AtomicU64,
    pub(crate) lost_races: AtomicU64,
    pub(crate) completed: AtomicU64,
    pub(crate) leases_lost: AtomicU64,
    pub(crate) extends: AtomicU64,
    pub(crate) releases: AtomicU64,
    pub(crate) idle_waits: AtomicU64,
    pub(crate) events_dropped: AtomicU64,
}

impl StatsCells {
    pub(crate) fn bump(cell: &AtomicU64) {
        cell.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> WorkerStats {
        let read = |cell: &AtomicU64| cell.load(Ordering::Relaxed);
        WorkerStats {
            claims: read(&self.claims),
            wins: read(&self.wins),
            lost_races: read(&self.lost_races),
            completed: read(&self.completed),
            leases_lost: read(&self.leases_lost),
            extends: read(&self.extends),
            releases: read(&self.releases),
            idle_waits: read(&self.idle_waits),
            events_dropped: read(&self.events_dropped),
        }
    }
}
