//! [`PartitionTally`]: what a reader of one partition has seen, and the checks it makes on the way.
//!
//! Every events reader — the follow consumer, the replay, the projection — feeds each record
//! through a tally. The tally counts, and it checks the two things a log promises a keyed reader:
//!
//! * **nothing skipped**: offsets are gap-free, so a reader that jumps past an offset it never
//!   handled has lost records ([`PartitionTally::skipped_offsets`]). That is the one thing
//!   at-least-once forbids.
//! * **per-user order**: one user's events share a partition and arrive in the order the
//!   publisher sent them, so at each *new* offset a user's `seq` must be higher than the last one
//!   seen from the same publisher ([`PartitionTally::order_violations`]).
//!
//! # Duplicates are not violations
//!
//! At-least-once means a reader may see a record again: a consumer that crashed after handling a
//! batch but before saving its position reads that batch again after the restart. A duplicate is
//! recognised by its **offset** — the log's identity for a record — not by its content: an offset
//! below [`PartitionTally::next_offset`] was handled already, is counted in
//! [`PartitionTally::duplicates`], and is otherwise ignored (it is not counted twice and not
//! order-checked again). Telling duplicates apart by offset is what makes the order check strict:
//! a `seq` that goes down at a *new* offset can only be a real violation.
//!
//! # Order is per publisher
//!
//! `seq` counts one publisher's events for one user, so two publishers writing for the same user
//! interleave two independent sequences (A5, B0, A6 is in order). The check therefore remembers
//! the last `seq` per *(user, publisher)*: remembering only the user's last event would forget A's
//! position as soon as B writes, and A5, B0, A4 would pass.
//!
//! Memory: per user seen in the partition, a count and the last `seq` of at most
//! [`MAX_PUBLISHERS_PER_USER`] publishers (the least recently seen is forgotten beyond that; its
//! next event is then not order-checked).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::events::event::{DecodeError, UserEvent};

/// Publishers whose last `seq` the order check remembers per user; beyond this the one seen
/// least recently is forgotten. Publishers are runs of the publisher (a new id per run), so a
/// user sees a new one per restart; the bound keeps a long-lived reader's memory flat.
pub const MAX_PUBLISHERS_PER_USER: usize = 16;

/// What one record turned out to be.
#[derive(Debug)]
pub enum Observation {
    /// A new record, in order.
    New(UserEvent),
    /// A new record whose `seq` is not above the user's last one from the same publisher.
    OutOfOrder {
        /// The event.
        event: UserEvent,
        /// The user's last `seq` before it.
        previous_seq: u64,
    },
    /// An offset handled before (at-least-once redelivery).
    Duplicate,
    /// A new record that is not a `UserEvent` (counted and skipped, never blocking the partition).
    Undecodable(DecodeError),
}

/// Counts and checks of one partition as read by one reader.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionTally {
    /// The partition.
    pub partition: i32,
    /// The first offset handled.
    pub first_offset: Option<i64>,
    /// One past the highest offset handled: where reading continues.
    pub next_offset: Option<i64>,
    /// Distinct records handled (each offset once, decodable or not).
    pub records: u64,
    /// Records handled again (offset below `next_offset`).
    pub duplicates: u64,
    /// New records whose `seq` went down for their user (must stay 0).
    pub order_violations: u64,
    /// Offsets jumped over without being handled (must stay 0).
    pub skipped_offsets: u64,
    /// Records that are not `UserEvent`s.
    pub undecodable: u64,
    /// Distinct events per user.
    pub per_user: BTreeMap<String, u64>,
    /// Per user: `(publisher, last seq)` of the last [`MAX_PUBLISHERS_PER_USER`] publishers,
    /// least recently seen first.
    #[serde(skip)]
    last_seq: HashMap<String, Vec<(Uuid, u64)>>,
}

impl PartitionTally {
    /// An empty tally of `partition`.
    pub fn new(partition: i32) -> Self {
        Self {
            partition,
            ..Self::default()
        }
    }

    /// Distinct decodable events.
    pub fn events(&self) -> u64 {
        self.per_user.values().sum()
    }

    /// Problems that must not happen: order violations and skipped offsets.
    pub fn violations(&self) -> u64 {
        self.order_violations + self.skipped_offsets
    }

    /// Feeds the record at `offset`; logs (loudly) anything wrong. Records must come in offset
    /// order, as a consumer reads them.
    pub fn observe(&mut self, offset: i64, payload: &[u8]) -> Observation {
        match self.next_offset {
            Some(next) if offset < next => {
                self.duplicates += 1;
                return Observation::Duplicate;
            }
            Some(next) if offset > next => {
                self.skipped_offsets += (offset - next) as u64;
                tracing::error!(
                    partition = self.partition,
                    from = next,
                    to = offset,
                    "records skipped: offsets {next}..{offset} were never handled"
                );
            }
            _ => {}
        }
        self.first_offset.get_or_insert(offset);
        self.next_offset = Some(offset + 1);
        self.records += 1;
        let event = match UserEvent::decode(payload) {
            Ok(event) => event,
            Err(error) => {
                self.undecodable += 1;
                tracing::warn!(
                    partition = self.partition,
                    offset,
                    %error,
                    "not a UserEvent; counted and skipped"
                );
                return Observation::Undecodable(error);
            }
        };
        *self.per_user.entry(event.user_id.clone()).or_insert(0) += 1;
        let publishers = self.last_seq.entry(event.user_id.clone()).or_default();
        let previous = publishers
            .iter()
            .position(|(publisher, _)| *publisher == event.publisher_id)
            .map(|at| publishers.remove(at).1);
        if publishers.len() >= MAX_PUBLISHERS_PER_USER {
            publishers.remove(0);
        }
        // Most recently seen last; a violation still moves the position on, so one event out
        // of place is reported once, not again for every event after it.
        publishers.push((event.publisher_id, event.seq));
        match previous {
            Some(previous_seq) if event.seq <= previous_seq => {
                self.order_violations += 1;
                tracing::error!(
                    partition = self.partition,
                    offset,
                    user = %event.user_id,
                    seq = event.seq,
                    previous_seq,
                    "per-user order violated"
                );
                Observation::OutOfOrder {
                    event,
                    previous_seq,
                }
            }
            _ => Observation::New(event),
        }
    }
}

/// Serde for a map of tallies *with* their order-check state (which `/stats` leaves out): the
/// projection's snapshot restores it, or the first event of each user after a restore would go
/// unchecked against the one before.
pub(crate) mod with_order_state {
    use std::collections::{BTreeMap, HashMap};

    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use uuid::Uuid;

    use super::PartitionTally;

    #[derive(Serialize)]
    struct TallyRef<'a> {
        #[serde(flatten)]
        tally: &'a PartitionTally,
        last_seq: &'a HashMap<String, Vec<(Uuid, u64)>>,
    }

    #[derive(Deserialize)]
    struct TallyOwned {
        #[serde(flatten)]
        tally: PartitionTally,
        last_seq: HashMap<String, Vec<(Uuid, u64)>>,
    }

    pub(crate) fn serialize<S: Serializer>(
        tallies: &BTreeMap<i32, PartitionTally>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_map(tallies.iter().map(|(partition, tally)| {
            let with_order = TallyRef {
                tally,
                last_seq: &tally.last_seq,
            };
            (partition, with_order)
        }))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<BTreeMap<i32, PartitionTally>, D::Error> {
        let owned = BTreeMap::<i32, TallyOwned>::deserialize(deserializer)?;
        Ok(owned
            .into_iter()
            .map(|(partition, owned)| {
                let mut tally = owned.tally;
                tally.last_seq = owned.last_seq;
                (partition, tally)
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::event::EventKind;

    fn event(publisher_id: Uuid, user: &str, seq: u64) -> Vec<u8> {
        UserEvent {
            publisher_id,
            user_id: user.into(),
            seq,
            kind: EventKind::ViewedPage,
            at_ms: 0,
        }
        .encode()
    }

    #[test]
    fn a_new_publisher_restarts_the_sequence_without_a_violation() {
        let (first, second) = (Uuid::new_v4(), Uuid::new_v4());
        let mut tally = PartitionTally::new(0);
        tally.observe(0, &event(first, "u", 5));
        tally.observe(1, &event(second, "u", 0));
        assert_eq!(tally.order_violations, 0);
        assert_eq!(tally.per_user["u"], 2);
    }

    #[test]
    fn interleaved_publishers_do_not_hide_a_violation() {
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let mut tally = PartitionTally::new(0);
        tally.observe(0, &event(a, "u", 5));
        tally.observe(1, &event(b, "u", 0));
        assert!(matches!(
            tally.observe(2, &event(b, "u", 1)),
            Observation::New(_)
        ));
        assert!(matches!(
            tally.observe(3, &event(a, "u", 4)),
            Observation::OutOfOrder {
                previous_seq: 5,
                ..
            }
        ));
        assert!(matches!(
            tally.observe(4, &event(a, "u", 6)),
            Observation::New(_)
        ));
        assert_eq!(tally.order_violations, 1);
    }

    #[test]
    fn the_least_recently_seen_publisher_is_forgotten_beyond_the_cap() {
        let publishers: Vec<Uuid> = (0..=MAX_PUBLISHERS_PER_USER)
            .map(|_| Uuid::new_v4())
            .collect();
        let mut tally = PartitionTally::new(0);
        let mut offset = 0;
        for publisher in &publishers {
            tally.observe(offset, &event(*publisher, "u", 10));
            offset += 1;
        }
        assert_eq!(tally.last_seq["u"].len(), MAX_PUBLISHERS_PER_USER);
        // The first publisher was forgotten: its lower seq is not checked any more.
        assert!(matches!(
            tally.observe(offset, &event(publishers[0], "u", 1)),
            Observation::New(_)
        ));
        // The most recent one is still remembered.
        assert!(matches!(
            tally.observe(
                offset + 1,
                &event(publishers[MAX_PUBLISHERS_PER_USER], "u", 1)
            ),
            Observation::OutOfOrder { .. }
        ));
    }

    #[test]
    fn a_jump_in_offsets_is_counted_as_skipped() {
        let publisher = Uuid::new_v4();
        let mut tally = PartitionTally::new(0);
        tally.observe(3, &event(publisher, "u", 0));
        tally.observe(7, &event(publisher, "u", 1));
        assert_eq!(tally.skipped_offsets, 3);
        assert_eq!(tally.first_offset, Some(3));
        assert_eq!(tally.next_offset, Some(8));
    }

    #[test]
    fn garbage_is_counted_once_and_does_not_stop_the_tally() {
        let mut tally = PartitionTally::new(0);
        assert!(matches!(
            tally.observe(0, b"not an event"),
            Observation::Undecodable(_)
        ));
        tally.observe(1, &event(Uuid::new_v4(), "u", 0));
        assert_eq!(
            (tally.records, tally.undecodable, tally.events()),
            (2, 1, 1)
        );
    }
}
