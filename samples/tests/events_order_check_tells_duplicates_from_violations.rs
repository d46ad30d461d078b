//! Every events reader checks per-user order through a `PartitionTally`. A record seen again at an
//! offset already handled — what at-least-once redelivery looks like after a restart — is counted
//! as a duplicate and is not an order violation; a user's `seq` going down at a *new* offset is.

use booblik_samples::events::event::{EventKind, UserEvent};
use booblik_samples::events::tally::{Observation, PartitionTally};
use uuid::Uuid;

fn event(publisher: Uuid, user: &str, seq: u64) -> Vec<u8> {
    UserEvent {
        publisher_id: publisher,
        user_id: user.into(),
        seq,
        kind: EventKind::ViewedPage,
        at_ms: 0,
    }
    .encode()
}

#[test]
fn redelivered_offsets_are_duplicates_not_violations() {
    let publisher = Uuid::new_v4();
    let log: Vec<Vec<u8>> = (0..6).map(|seq| event(publisher, "ann", seq)).collect();
    let mut tally = PartitionTally::new(0);
    // Offsets 0..6 handled, then a restart from a checkpoint at 3 delivers 3..6 again.
    for (offset, payload) in log.iter().enumerate() {
        tally.observe(offset as i64, payload);
    }
    for (offset, payload) in log.iter().enumerate().skip(3) {
        assert!(matches!(
            tally.observe(offset as i64, payload),
            Observation::Duplicate
        ));
    }
    assert_eq!(tally.duplicates, 3);
    assert_eq!(tally.order_violations, 0);
    assert_eq!(tally.records, 6, "each offset counted once");
    assert_eq!(tally.per_user["ann"], 6);
}

#[test]
fn a_sequence_going_down_at_a_new_offset_is_a_violation() {
    let publisher = Uuid::new_v4();
    let mut tally = PartitionTally::new(0);
    tally.observe(0, &event(publisher, "ann", 0));
    tally.observe(1, &event(publisher, "bob", 0));
    tally.observe(2, &event(publisher, "ann", 2));
    let seen = tally.observe(3, &event(publisher, "ann", 1));
    assert!(matches!(
        seen,
        Observation::OutOfOrder {
            previous_seq: 2,
            ..
        }
    ));
    assert_eq!(tally.order_violations, 1);
    assert_eq!(tally.duplicates, 0);
}

#[test]
fn a_gap_in_one_users_sequence_is_not_a_violation() {
    // A failed delivery uses up a seq: the consumer sees a gap, never a reordering.
    let publisher = Uuid::new_v4();
    let mut tally = PartitionTally::new(0);
    tally.observe(0, &event(publisher, "ann", 0));
    tally.observe(1, &event(publisher, "ann", 5));
    assert_eq!(tally.violations(), 0);
}
