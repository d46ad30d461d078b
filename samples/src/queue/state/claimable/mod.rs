//! The open tasks, indexed so that a worker picks a claimable one without scanning them all.
//!
//! A task is *open* once its record has been read from `tasks` and as long as it is neither done
//! nor dead-lettered. An open task is claimable at a clock reading `now_ms` if no claim has won it
//! yet, or if its current lease has lapsed by `now_ms` ([`TaskState::is_claimable_at`]). The
//! second half depends on the clock, and the clock is not part of the state — so the index cannot
//! simply keep "the claimable set". It keeps the open tasks in two parts instead:
//!
//! * **free** — nobody has won the task yet: claimable at any `now_ms` ([`free_tasks`]);
//! * **leased** — ordered by `(expires_at_ms, offset)`: at `now_ms` the claimable ones are exactly
//!   the *prefix* with `expires_at_ms <= now_ms`, found without looking at the rest.
//!
//! The claimable set at `now_ms` is the free part plus that lapsed prefix ([`Candidates`]).
//! Leases lapse only when their holder stopped (or wrote too late), and the next claim replaces a
//! lapsed lease, so the prefix is normally short: what a pick costs no longer grows with the
//! backlog.
//!
//! Why not move lapsed tasks into the free part once the clock passes their expiry? Then the
//! index would depend on the clock readings it had seen, and a reading from the past (another
//! thread, a clock stepped back, a test) would get a wrong answer; two states that applied the
//! same records would no longer compare equal either. Here the index is a pure function of the
//! records applied, like the rest of [`QueueState`](super::QueueState).
//!
//! The index is right only if it hears of every change to a task: the state machine calls
//! [`ClaimableIndex::update`] after each record it applies, once the verdict has changed the
//! [`TaskState`].

mod candidates;
mod free_tasks;

pub use candidates::Candidates;

use std::collections::{BTreeMap, HashMap};

use uuid::Uuid;

use super::task_state::{TaskState, TaskStatus};
use free_tasks::FreeTasks;

/// Where an open task sits in the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// No claim has won the task yet.
    Free { offset: i64 },
    /// A claim has won it; the lease lapses at `expires_at_ms`.
    Leased { expires_at_ms: u64, offset: i64 },
}

impl Slot {
    /// The task's slot, or `None` if it is not open: its record has not been read from `tasks`
    /// (a worker could not run it), or it is done or dead-lettered.
    fn of(task: &TaskState) -> Option<Self> {
        let offset = task.submission.as_ref()?.offset;
        match &task.status {
            TaskStatus::Unclaimed => Some(Self::Free { offset }),
            TaskStatus::Leased(lease) => Some(Self::Leased {
                expires_at_ms: lease.expires_at_ms,
                offset,
            }),
            TaskStatus::Done { .. } | TaskStatus::DeadLettered { .. } => None,
        }
    }
}

/// The open tasks: free ones, and leased ones by lease expiry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct ClaimableIndex {
    free: FreeTasks,
    /// Leased open tasks by `(expires_at_ms, offset)`; the offset makes keys unique.
    leased: BTreeMap<(u64, i64), Uuid>,
    /// Where each open task sits, so that [`update`](Self::update) can move it.
    slots: HashMap<Uuid, Slot>,
}

impl ClaimableIndex {
    /// Moves `task` to where its state now puts it (or out of the index). Called after every
    /// change to a task: the verdict first, then the index follows it.
    pub(super) fn update(&mut self, task: &TaskState) {
        let after = Slot::of(task);
        let before = match after {
            Some(slot) => self.slots.insert(task.task_id, slot),
            None => self.slots.remove(&task.task_id),
        };
        if before != after {
            if let Some(slot) = before {
                self.remove(slot);
            }
            if let Some(slot) = after {
                self.insert(slot, task.task_id);
            }
        }
    }

    fn insert(&mut self, slot: Slot, task_id: Uuid) {
        match slot {
            Slot::Free { offset } => self.free.insert(offset, task_id),
            Slot::Leased {
                expires_at_ms,
                offset,
            } => {
                self.leased.insert((expires_at_ms, offset), task_id);
            }
        }
    }

    fn remove(&mut self, slot: Slot) {
        match slot {
            Slot::Free { offset } => self.free.remove(offset),
            Slot::Leased {
                expires_at_ms,
                offset,
            } => {
                self.leased.remove(&(expires_at_ms, offset));
            }
        }
    }

    /// Open tasks, leased or not.
    pub(super) fn open_count(&self) -> usize {
        self.free.len() + self.leased.len()
    }

    /// The tasks claimable at `now_ms`. Costs O(log n) plus the number of lapsed leases.
    pub(super) fn candidates(&self, now_ms: u64) -> Candidates<'_> {
        // Every key `(expires_at_ms, _)` with `expires_at_ms <= now_ms`: a lease covers
        // `[start, expires_at_ms)`, so it has lapsed once the clock reads its expiry.
        let lapsed = self.leased.range(..=(now_ms, i64::MAX));
        Candidates::new(&self.free, lapsed)
    }

    /// The earliest expiry after `now_ms` among the leases on open tasks: when the next task
    /// becomes claimable without any new record. O(log n).
    pub(super) fn next_lapse_after(&self, now_ms: u64) -> Option<u64> {
        use std::ops::Bound::{Excluded, Unbounded};
        self.leased
            .range((Excluded((now_ms, i64::MAX)), Unbounded))
            .next()
            .map(|(&(expires_at_ms, _), _)| expires_at_ms)
    }
}
