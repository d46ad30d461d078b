//! [`Projection`]: the read model, a pure fold over the log — no I/O, no clock.
//!
//! `state = fold(apply, empty, records in offset order)`. Everything the projection answers comes
//! from the records alone, so any reader that folds the same records gets the same state; that is
//! what lets a projection be thrown away and rebuilt from the log at any time.
//!
//! The fold keeps, per partition, the position it has reached (one past the last offset applied).
//! The position is **part of the state**: the state is exactly "the fold of the records below the
//! positions". A record below a partition's position was applied already and is ignored, so
//! applying a batch twice changes nothing — the fold is idempotent by offset.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::events::event::EventKind;
use crate::events::tally::{Observation, PartitionTally};

/// What the read model knows about one user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserView {
    /// The user.
    pub user_id: String,
    /// The partition holding the user's events.
    pub partition: i32,
    /// Events seen.
    pub events: u64,
    /// `Purchased` events seen.
    pub purchases: u64,
    /// The kind of the latest event.
    pub last_kind: EventKind,
    /// The latest event's `seq`.
    pub last_seq: u64,
    /// The latest event's publisher clock.
    pub last_at_ms: u64,
}

/// One row of the top-users list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopUser {
    /// The user.
    pub user_id: String,
    /// Events seen.
    pub events: u64,
}

/// Events per user, folded from the log. Serializable as one value with its positions: the
/// projection's snapshot (`snapshot.rs`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Projection {
    users: HashMap<String, UserView>,
    #[serde(with = "crate::events::tally::with_order_state")]
    tallies: BTreeMap<i32, PartitionTally>,
}

impl Projection {
    /// The empty model: the fold of no records.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies the record at `partition`/`offset`. Records of one partition must come in offset
    /// order; a record below the partition's position is ignored (already applied).
    pub fn apply(&mut self, partition: i32, offset: i64, payload: &[u8]) {
        let tally = self
            .tallies
            .entry(partition)
            .or_insert_with(|| PartitionTally::new(partition));
        let event = match tally.observe(offset, payload) {
            Observation::New(event) | Observation::OutOfOrder { event, .. } => event,
            Observation::Duplicate | Observation::Undecodable(_) => return,
        };
        let view = self
            .users
            .entry(event.user_id.clone())
            .or_insert_with(|| UserView {
                user_id: event.user_id.clone(),
                partition,
                events: 0,
                purchases: 0,
                last_kind: event.kind,
                last_seq: event.seq,
                last_at_ms: event.at_ms,
            });
        view.partition = partition;
        view.events += 1;
        view.purchases += u64::from(event.kind == EventKind::Purchased);
        view.last_kind = event.kind;
        view.last_seq = event.seq;
        view.last_at_ms = event.at_ms;
    }

    /// One user, if any event of theirs was applied.
    pub fn user(&self, user_id: &str) -> Option<&UserView> {
        self.users.get(user_id)
    }

    /// Number of users seen.
    pub fn user_count(&self) -> usize {
        self.users.len()
    }

    /// The `n` users with the most events; ties by user id, so every reader lists the same users.
    /// Sorts every user: fine for thousands, a sample's scale (keep an ordered index for more).
    pub fn top_users(&self, n: usize) -> Vec<TopUser> {
        let mut users: Vec<&UserView> = self.users.values().collect();
        users.sort_by(|a, b| {
            b.events
                .cmp(&a.events)
                .then_with(|| a.user_id.cmp(&b.user_id))
        });
        users
            .into_iter()
            .take(n)
            .map(|view| TopUser {
                user_id: view.user_id.clone(),
                events: view.events,
            })
            .collect()
    }

    /// Events per user.
    pub fn events_per_user(&self) -> BTreeMap<String, u64> {
        self.users
            .values()
            .map(|view| (view.user_id.clone(), view.events))
            .collect()
    }

    /// Events applied, every partition.
    pub fn events(&self) -> u64 {
        self.users.values().map(|view| view.events).sum()
    }

    /// Per partition: the tally of what was applied, including its position (`next_offset`).
    pub fn tallies(&self) -> &BTreeMap<i32, PartitionTally> {
        &self.tallies
    }

    /// Per partition: the position — one past the last offset applied.
    pub fn positions(&self) -> BTreeMap<i32, i64> {
        self.tallies
            .iter()
            .filter_map(|(&partition, tally)| Some((partition, tally.next_offset?)))
            .collect()
    }
}
