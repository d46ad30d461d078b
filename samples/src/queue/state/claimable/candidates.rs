//! The tasks claimable at one clock reading, as the index sees them: the free tasks plus the
//! leased ones whose lease has lapsed.
//!
//! A pick needs three things of this set, and none of them may cost a pass over the backlog:
//! its size, its oldest member, and its member at a given position. Positions run over the free
//! part first, then over the lapsed leases; every member has exactly one position below
//! [`len`](Candidates::len), so drawing a position uniformly draws a member uniformly.

use std::collections::btree_map;

use uuid::Uuid;

use super::free_tasks::FreeTasks;

/// Leased open tasks by `(expires_at_ms, offset)`, as the index keeps them.
type LapsedRange<'a> = btree_map::Range<'a, (u64, i64), Uuid>;

/// The tasks claimable at one clock reading (see [`QueueState::candidates`](super::super::QueueState::candidates)).
#[derive(Debug, Clone)]
pub struct Candidates<'a> {
    free: &'a FreeTasks,
    /// Leased open tasks whose lease has lapsed, by `(expires_at_ms, offset)`.
    lapsed: LapsedRange<'a>,
    /// How many `lapsed` yields, counted once.
    lapsed_count: usize,
}

impl<'a> Candidates<'a> {
    /// Counts the lapsed leases: O(lapsed leases).
    pub(super) fn new(free: &'a FreeTasks, lapsed: LapsedRange<'a>) -> Self {
        let lapsed_count = lapsed.clone().count();
        Self {
            free,
            lapsed,
            lapsed_count,
        }
    }

    /// How many tasks are claimable.
    pub fn len(&self) -> usize {
        self.free.len() + self.lapsed_count
    }

    /// Whether no task is claimable.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The claimable task submitted first (lowest offset in `tasks`).
    pub fn oldest(&self) -> Option<Uuid> {
        let oldest_free = self.free.oldest();
        let oldest_lapsed = self.lapsed_by_offset().min();
        match (oldest_free, oldest_lapsed) {
            (Some(free), Some(lapsed)) => Some(free.min(lapsed)),
            (free, lapsed) => free.or(lapsed),
        }
        .map(|(_, task_id)| task_id)
    }

    /// The claimable task at `position`, in an order that is fixed while the state does not
    /// change but means nothing else; `None` from [`len`](Self::len) on. As `position` runs over
    /// `0..len()`, every claimable task comes up exactly once.
    pub fn at(&self, position: usize) -> Option<Uuid> {
        match position.checked_sub(self.free.len()) {
            None => self.free.at(position),
            Some(lapsed_position) => self
                .lapsed
                .clone()
                .nth(lapsed_position)
                .map(|(_, &task_id)| task_id),
        }
    }

    /// Up to `count` claimable tasks from `start` on, wrapping at [`len`](Self::len): the
    /// members at positions `start, start + 1, …` modulo `len`, each at most once. Costs
    /// O(`count`) lookups plus one walk into the lapsed leases, where calling
    /// [`at`](Self::at) for each position would walk them once per position.
    pub fn window(&self, start: usize, count: usize) -> impl Iterator<Item = Uuid> + '_ {
        let len = self.len();
        let count = count.min(len);
        let free_len = self.free.len();
        // Positions in the lapsed part come up consecutively, in at most two runs (the window
        // may start inside the part and wrap back into it): one iterator per run, advanced
        // once to the run's first position, serves it.
        let mut lapsed: Option<(usize, LapsedRange<'a>)> = None;
        (0..count).filter_map(move |step| {
            let position = (start + step) % len;
            match position.checked_sub(free_len) {
                None => self.free.at(position),
                Some(lapsed_position) => {
                    if lapsed
                        .as_ref()
                        .is_none_or(|(next, _)| *next != lapsed_position)
                    {
                        let mut walk = self.lapsed.clone();
                        if lapsed_position > 0 {
                            walk.nth(lapsed_position - 1);
                        }
                        lapsed = Some((lapsed_position, walk));
                    }
                    let (next, walk) = lapsed.as_mut()?;
                    *next += 1;
                    walk.next().map(|(_, &task_id)| task_id)
                }
            }
        })
    }

    /// Every claimable task, oldest first: the free tasks (already in offset order) merged with
    /// the lapsed ones (sorted here; there are few).
    pub fn oldest_first(self) -> impl Iterator<Item = Uuid> + 'a {
        let mut lapsed: Vec<(i64, Uuid)> = self.lapsed_by_offset().collect();
        lapsed.sort_unstable();
        let mut lapsed = lapsed.into_iter().peekable();
        let free_tasks: &'a FreeTasks = self.free;
        let mut free = free_tasks.oldest_first().peekable();
        std::iter::from_fn(move || {
            let free_is_older = match (free.peek(), lapsed.peek()) {
                (Some(&(free_offset, _)), Some(&(lapsed_offset, _))) => free_offset < lapsed_offset,
                (Some(_), None) => true,
                (None, _) => false,
            };
            let next = if free_is_older {
                free.next()
            } else {
                lapsed.next()
            };
            next.map(|(_, task_id)| task_id)
        })
    }

    /// The lapsed tasks as `(offset, task_id)`, in order of expiry.
    fn lapsed_by_offset(&self) -> impl Iterator<Item = (i64, Uuid)> + '_ {
        self.lapsed
            .clone()
            .map(|(&(_, offset), &task_id)| (offset, task_id))
    }
}
