//! Open tasks that no claim has won yet: claimable whatever the clock says.
//!
//! Two questions are asked of this set on every pick, and no single standard collection answers
//! both cheaply:
//!
//! * **the oldest member** (for [`Pick::First`](crate::queue::pick::Pick)) — a [`BTreeMap`] keyed
//!   by the task's offset in `tasks` answers in O(log n);
//! * **the member at position `i`** (for a uniform [`Pick::Random`](crate::queue::pick::Pick):
//!   draw `i` below the size, take the member at `i`) — a [`Vec`] answers in O(1), but removing
//!   from the middle of a `Vec` costs O(n) — unless order does not matter: then the last element
//!   moves into the hole ([`Vec::swap_remove`]), and a map from offset to position says where
//!   each task is.
//!
//! So the set keeps both, and every insert and remove updates both.

use std::collections::{BTreeMap, HashMap};

use uuid::Uuid;

/// The free tasks, by offset and in a `Vec` for choosing by position.
#[derive(Debug, Clone, Default)]
pub(super) struct FreeTasks {
    /// Every member, oldest first.
    by_offset: BTreeMap<i64, Uuid>,
    /// The same members in no meaningful order: insertion order, shuffled by removals.
    by_position: Vec<(i64, Uuid)>,
    /// Where each member (by offset) sits in `by_position`.
    position_of: HashMap<i64, usize>,
}

impl FreeTasks {
    pub(super) fn len(&self) -> usize {
        self.by_position.len()
    }

    pub(super) fn insert(&mut self, offset: i64, task_id: Uuid) {
        if self.by_offset.insert(offset, task_id).is_none() {
            self.position_of.insert(offset, self.by_position.len());
            self.by_position.push((offset, task_id));
        }
    }

    pub(super) fn remove(&mut self, offset: i64) {
        if self.by_offset.remove(&offset).is_none() {
            return;
        }
        let position = self
            .position_of
            .remove(&offset)
            .expect("every member has a position");
        self.by_position.swap_remove(position);
        // The former last member now fills the hole (unless the removed one was the last).
        if let Some(&(moved_offset, _)) = self.by_position.get(position) {
            self.position_of.insert(moved_offset, position);
        }
    }

    /// The member with the lowest offset.
    pub(super) fn oldest(&self) -> Option<(i64, Uuid)> {
        self.by_offset
            .first_key_value()
            .map(|(&offset, &task_id)| (offset, task_id))
    }

    /// The member at `position` (below [`len`](Self::len)) in an arbitrary but fixed order.
    pub(super) fn at(&self, position: usize) -> Option<Uuid> {
        self.by_position.get(position).map(|&(_, task_id)| task_id)
    }

    /// Every member, oldest first.
    pub(super) fn oldest_first(&self) -> impl Iterator<Item = (i64, Uuid)> + '_ {
        self.by_offset
            .iter()
            .map(|(&offset, &task_id)| (offset, task_id))
    }
}

/// Two sets are equal when they hold the same tasks. The order of `by_position` depends on the
/// history of inserts and removes, and two readers that applied the same records with the two
/// logs interleaved differently must still compare equal (see `QueueState`'s `PartialEq`).
impl PartialEq for FreeTasks {
    fn eq(&self, other: &Self) -> bool {
        self.by_offset == other.by_offset
    }
}

impl Eq for FreeTasks {}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: i64) -> Uuid {
        Uuid::from_u128(n.unsigned_abs().into())
    }

    #[test]
    fn removing_from_the_middle_keeps_every_position_right() {
        let mut free = FreeTasks::default();
        for offset in 0..5 {
            free.insert(offset, id(offset));
        }
        free.remove(1);
        free.remove(4);
        let mut members: Vec<_> = (0..free.len()).filter_map(|i| free.at(i)).collect();
        members.sort();
        assert_eq!(members, vec![id(0), id(2), id(3)]);
        for (&offset, &position) in &free.position_of {
            assert_eq!(free.by_position[position].0, offset);
        }
        assert_eq!(free.oldest(), Some((0, id(0))));
    }

    #[test]
    fn removing_the_last_member_empties_the_set() {
        let mut free = FreeTasks::default();
        free.insert(7, id(7));
        free.remove(7);
        free.remove(7);
        assert_eq!(free.len(), 0);
        assert_eq!(free.oldest(), None);
        assert!(free.position_of.is_empty());
    }
}
