//! The verdict itself, not only a worker's configuration, bounds a lease: a claim or an extend
//! whose `lease_ms` exceeds `QueueConfig::max_lease_ms` is void for every reader, and the
//! verifier agrees. One bad writer can no longer park a task forever.

use booblik_samples::queue::record::{Claim, ClaimsRecord, Extend, Task};
use booblik_samples::queue::state::{
    ClaimLostReason, DEFAULT_MAX_LEASE_MS, Event, QueueConfig, QueueState, Rejection,
};
use booblik_samples::queue::verify::{VerifyConfig, verify};
use uuid::Uuid;

const T0_MS: u64 = 1_700_000_000_000;
const LEASE_MS: u64 = 1_000;
/// A century: what a buggy or hostile writer might ask for.
const FOREVER_MS: u64 = 100 * 365 * 24 * 60 * 60 * 1000;

fn claim(worker: u128, at_ms: u64, lease_ms: u64) -> ClaimsRecord {
    ClaimsRecord::Claim(Claim {
        task_id: Uuid::from_u128(1),
        worker_id: Uuid::from_u128(worker),
        claimed_at_ms: at_ms,
        lease_ms,
    })
}

fn extend(worker: u128, token: i64, at_ms: u64, lease_ms: u64) -> ClaimsRecord {
    ClaimsRecord::Extend(Extend {
        task_id: Uuid::from_u128(1),
        worker_id: Uuid::from_u128(worker),
        token,
        extended_at_ms: at_ms,
        lease_ms,
    })
}

/// Both logs, as `(offset, record)`.
type Logs = (Vec<(i64, Task)>, Vec<(i64, ClaimsRecord)>);

fn logs() -> Logs {
    let task = Task {
        task_id: Uuid::from_u128(1),
        payload: vec![],
        submitted_at_ms: T0_MS,
    };
    let claims = vec![
        // A bad writer asks for a century: void, the task stays free.
        (0, claim(0xBAD, T0_MS, FOREVER_MS)),
        // An honest worker claims a moment later and wins.
        (1, claim(0x600D, T0_MS + 1, LEASE_MS)),
        // The holder then tries to stretch its lease past the maximum: void, its lease still
        // lapses at T0 + 1 + LEASE_MS.
        (2, extend(0x600D, 1, T0_MS + 10, FOREVER_MS)),
        // So a claim after that expiry wins.
        (3, claim(0xBAD, T0_MS + 1 + LEASE_MS, LEASE_MS)),
    ];
    (vec![(0, task)], claims)
}

#[test]
fn claims_and_extends_longer_than_the_maximum_are_void_for_every_reader() {
    const { assert!(FOREVER_MS > DEFAULT_MAX_LEASE_MS) };
    let (tasks, claims) = logs();
    let mut state = QueueState::new(QueueConfig::default());
    state.apply_task(0, &tasks[0].1).unwrap();
    let events: Vec<Event> = claims
        .iter()
        .map(|(offset, record)| state.apply_claims_record(*offset, record).unwrap())
        .collect();

    assert!(
        matches!(
            &events[0],
            Event::ClaimLost {
                reason: ClaimLostReason::LeaseTooLong {
                    lease_ms: FOREVER_MS,
                    max_lease_ms: DEFAULT_MAX_LEASE_MS
                },
                ..
            }
        ),
        "{:?}",
        events[0]
    );
    assert!(
        matches!(events[1], Event::ClaimWon { token: 1, .. }),
        "{:?}",
        events[1]
    );
    assert!(
        matches!(
            &events[2],
            Event::ExtendVoid {
                reason: Rejection::LeaseTooLong {
                    lease_ms: FOREVER_MS,
                    max_lease_ms: DEFAULT_MAX_LEASE_MS
                },
                ..
            }
        ),
        "{:?}",
        events[2]
    );
    assert!(
        matches!(events[3], Event::ClaimWon { token: 3, .. }),
        "{:?}",
        events[3]
    );
    // The void claim counted no expired lease.
    assert_eq!(state.counters().expired_leases, 1);
}

#[test]
fn the_verifier_judges_the_maximum_alike_and_a_smaller_maximum_changes_the_verdicts() {
    let (tasks, claims) = logs();
    let report = verify(&tasks, &claims, &VerifyConfig::drained_at(T0_MS));
    assert!(report.is_clean(), "{:#?}", report.violations);
    assert_eq!(report.summary.wins, 2);

    // With a maximum below the honest lease, even the honest claims are void: the maximum is
    // part of the queue's definition, and every reader must use the same one.
    let strict = QueueConfig {
        max_lease_ms: LEASE_MS - 1,
        ..QueueConfig::default()
    };
    let mut state = QueueState::new(strict);
    state.apply_task(0, &tasks[0].1).unwrap();
    for (offset, record) in &claims {
        state.apply_claims_record(*offset, record).unwrap();
    }
    assert_eq!(state.counters().wins, 0);
    let report = verify(
        &tasks,
        &claims,
        &VerifyConfig {
            queue: strict,
            ..VerifyConfig::drained_at(T0_MS)
        },
    );
    assert_eq!(report.summary.wins, 0, "{:#?}", report.violations);
}
