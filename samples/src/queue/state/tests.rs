//! The verdict rules, one behaviour per test.

use std::num::NonZeroU32;

use uuid::Uuid;

use super::*;
use crate::queue::record::{Claim, Done, Extend};

const LEASE_MS: u64 = 1_000;
const T0_MS: u64 = 1_700_000_000_000;

fn worker(n: u128) -> Uuid {
    Uuid::from_u128(0xAAAA_0000 + n)
}

fn task_id(n: u128) -> Uuid {
    Uuid::from_u128(0x7A5C_0000 + n)
}

fn task(n: u128) -> Task {
    Task {
        task_id: task_id(n),
        payload: vec![n as u8],
        submitted_at_ms: T0_MS,
    }
}

fn claim(task: u128, by: u128, at_ms: u64) -> ClaimsRecord {
    ClaimsRecord::Claim(Claim {
        task_id: task_id(task),
        worker_id: worker(by),
        claimed_at_ms: at_ms,
        lease_ms: LEASE_MS,
    })
}

fn extend(task: u128, by: u128, token: i64, at_ms: u64) -> ClaimsRecord {
    ClaimsRecord::Extend(Extend {
        task_id: task_id(task),
        worker_id: worker(by),
        token,
        extended_at_ms: at_ms,
        lease_ms: LEASE_MS,
    })
}

fn done(task: u128, by: u128, token: i64, at_ms: u64) -> ClaimsRecord {
    ClaimsRecord::Done(Done {
        task_id: task_id(task),
        worker_id: worker(by),
        token,
        done_at_ms: at_ms,
        result: b"ok".to_vec(),
    })
}

fn config(max_expired_leases: u32) -> QueueConfig {
    QueueConfig {
        max_expired_leases: NonZeroU32::new(max_expired_leases).expect("non-zero"),
        ..QueueConfig::default()
    }
}

/// A state that has read task 1, with a claims log fed record by record.
struct Log {
    state: QueueState,
    next_offset: i64,
}

impl Log {
    fn new(max_expired_leases: u32) -> Self {
        let mut state = QueueState::new(config(max_expired_leases));
        state.apply_task(0, &task(1)).expect("first task offset");
        Self {
            state,
            next_offset: 0,
        }
    }

    /// Appends `record` at the next offset; returns (offset, verdict).
    fn append(&mut self, record: &ClaimsRecord) -> (i64, Event) {
        let offset = self.next_offset;
        self.next_offset += 1;
        let event = self
            .state
            .apply_claims_record(offset, record)
            .expect("offsets increase");
        (offset, event)
    }
}

#[test]
fn the_first_claim_wins_and_its_offset_is_the_token() {
    let mut log = Log::new(3);
    let (offset, event) = log.append(&claim(1, 1, T0_MS));
    assert_eq!(
        event,
        Event::ClaimWon {
            task_id: task_id(1),
            worker_id: worker(1),
            token: offset,
            expires_at_ms: T0_MS + LEASE_MS,
            attempt: 1,
            after_expiry: false,
        }
    );
    assert_eq!(log.state.lease(task_id(1)).map(|l| l.token), Some(offset));
}

#[test]
fn a_concurrent_second_claim_loses_to_the_live_lease() {
    let mut log = Log::new(3);
    let (token, _) = log.append(&claim(1, 1, T0_MS));
    let (_, event) = log.append(&claim(1, 2, T0_MS + 1));
    assert_eq!(
        event,
        Event::ClaimLost {
            task_id: task_id(1),
            reason: ClaimLostReason::AlreadyLeased {
                holder_token: token,
                holder_worker_id: worker(1),
                expires_at_ms: T0_MS + LEASE_MS,
            },
        }
    );
    assert_eq!(
        log.state.lease(task_id(1)).map(|l| l.worker_id),
        Some(worker(1))
    );
}

#[test]
fn a_claim_written_earlier_but_appended_later_still_loses() {
    // Log order, not timestamp order, decides: the second claim carries an earlier timestamp.
    let mut log = Log::new(3);
    log.append(&claim(1, 1, T0_MS + 10));
    let (_, event) = log.append(&claim(1, 2, T0_MS));
    assert!(matches!(event, Event::ClaimLost { .. }), "{event:?}");
}

#[test]
fn a_lapsed_lease_lets_a_new_claim_win() {
    let mut log = Log::new(3);
    log.append(&claim(1, 1, T0_MS));
    // The lease covers [T0, T0 + LEASE): a claim stamped exactly at the expiry wins.
    let (offset, event) = log.append(&claim(1, 2, T0_MS + LEASE_MS));
    assert!(
        matches!(event, Event::ClaimWon { token, attempt: 2, .. } if token == offset),
        "{event:?}"
    );
    assert_eq!(
        log.state.task(task_id(1)).map(|t| t.expired_leases),
        Some(1)
    );
}

#[test]
fn an_extend_before_expiry_keeps_the_lease() {
    let mut log = Log::new(3);
    let (token, _) = log.append(&claim(1, 1, T0_MS));
    let (_, extended) = log.append(&extend(1, 1, token, T0_MS + LEASE_MS - 1));
    assert_eq!(
        extended,
        Event::Extended {
            task_id: task_id(1),
            token,
            expires_at_ms: T0_MS + 2 * LEASE_MS - 1,
        }
    );
    // Without the extend this claim would have won.
    let (_, rival) = log.append(&claim(1, 2, T0_MS + LEASE_MS));
    assert!(matches!(rival, Event::ClaimLost { .. }), "{rival:?}");
}

#[test]
fn an_extend_at_or_after_expiry_is_void() {
    let mut log = Log::new(3);
    let (token, _) = log.append(&claim(1, 1, T0_MS));
    let (_, event) = log.append(&extend(1, 1, token, T0_MS + LEASE_MS));
    assert_eq!(
        event,
        Event::ExtendVoid {
            task_id: task_id(1),
            token,
            reason: Rejection::Expired {
                expires_at_ms: T0_MS + LEASE_MS,
            },
        }
    );
    assert_eq!(
        log.state.lease(task_id(1)).map(|l| l.expires_at_ms),
        Some(T0_MS + LEASE_MS)
    );
}

#[test]
fn an_extend_with_a_stale_token_is_void() {
    let mut log = Log::new(3);
    let (stale, _) = log.append(&claim(1, 1, T0_MS));
    let (current, _) = log.append(&claim(1, 2, T0_MS + LEASE_MS));
    let (_, event) = log.append(&extend(1, 1, stale, T0_MS + LEASE_MS + 1));
    assert_eq!(
        event,
        Event::ExtendVoid {
            task_id: task_id(1),
            token: stale,
            reason: Rejection::StaleToken {
                current_token: current,
            },
        }
    );
}

#[test]
fn an_extend_with_the_current_token_from_another_worker_is_void() {
    let mut log = Log::new(3);
    let (token, _) = log.append(&claim(1, 1, T0_MS));
    let (_, event) = log.append(&extend(1, 2, token, T0_MS + 1));
    assert!(
        matches!(
            event,
            Event::ExtendVoid {
                reason: Rejection::WorkerMismatch { holder_worker_id },
                ..
            } if holder_worker_id == worker(1)
        ),
        "{event:?}"
    );
}

#[test]
fn a_late_done_from_a_superseded_holder_is_fenced() {
    let mut log = Log::new(3);
    let (stale, _) = log.append(&claim(1, 1, T0_MS));
    let (current, _) = log.append(&claim(1, 2, T0_MS + LEASE_MS));
    let (_, event) = log.append(&done(1, 1, stale, T0_MS + LEASE_MS + 5));
    assert_eq!(
        event,
        Event::DoneFenced {
            task_id: task_id(1),
            token: stale,
            reason: Rejection::StaleToken {
                current_token: current,
            },
        }
    );
    assert_eq!(log.state.lease(task_id(1)).map(|l| l.token), Some(current));
    assert_eq!(log.state.counters().fenced_dones, 1);
}

#[test]
fn a_done_with_the_current_token_completes_the_task_and_later_claims_lose() {
    let mut log = Log::new(3);
    let (token, _) = log.append(&claim(1, 1, T0_MS));
    let (done_offset, event) = log.append(&done(1, 1, token, T0_MS + 10));
    assert_eq!(
        event,
        Event::DoneAccepted {
            task_id: task_id(1),
            token,
        }
    );
    let state = log.state.task(task_id(1)).expect("known task");
    assert!(
        matches!(&state.status, TaskStatus::Done { lease, done_offset: at, .. }
            if lease.token == token && *at == done_offset)
    );
    let (_, late_claim) = log.append(&claim(1, 2, T0_MS + 10 * LEASE_MS));
    assert_eq!(
        late_claim,
        Event::ClaimLost {
            task_id: task_id(1),
            reason: ClaimLostReason::Done { token },
        }
    );
    assert_eq!(log.state.claimable(T0_MS + 10 * LEASE_MS).count(), 0);
}

#[test]
fn a_done_after_expiry_counts_while_no_other_claim_has_won() {
    let mut log = Log::new(3);
    let (token, _) = log.append(&claim(1, 1, T0_MS));
    let (_, event) = log.append(&done(1, 1, token, T0_MS + 5 * LEASE_MS));
    assert!(matches!(event, Event::DoneAccepted { .. }), "{event:?}");
}

#[test]
fn a_repeated_done_from_the_holder_has_no_effect() {
    let mut log = Log::new(3);
    let (token, _) = log.append(&claim(1, 1, T0_MS));
    log.append(&done(1, 1, token, T0_MS + 10));
    let (_, again) = log.append(&done(1, 1, token, T0_MS + 11));
    assert_eq!(
        again,
        Event::DoneRepeated {
            task_id: task_id(1),
            token,
        }
    );
    assert_eq!(log.state.counters().dones_accepted, 1);
    assert_eq!(log.state.counters().repeated_dones, 1);
}

#[test]
fn a_done_for_a_task_never_claimed_is_fenced() {
    let mut log = Log::new(3);
    let (_, event) = log.append(&done(1, 1, 0, T0_MS));
    assert!(
        matches!(
            event,
            Event::DoneFenced {
                reason: Rejection::NeverClaimed,
                ..
            }
        ),
        "{event:?}"
    );
}

#[test]
fn the_task_is_dead_lettered_by_the_claim_after_max_expired_leases() {
    const MAX_EXPIRED_LEASES: u32 = 2;
    let mut log = Log::new(MAX_EXPIRED_LEASES);
    let (_, first) = log.append(&claim(1, 1, T0_MS));
    let (_, second) = log.append(&claim(1, 2, T0_MS + LEASE_MS));
    assert!(matches!(first, Event::ClaimWon { attempt: 1, .. }));
    assert!(matches!(second, Event::ClaimWon { attempt: 2, .. }));
    // The second lease lapses too: that is the second expiry, and the claim finding it
    // dead-letters the task instead of winning a third attempt.
    let (dead_at, third) = log.append(&claim(1, 3, T0_MS + 2 * LEASE_MS));
    assert_eq!(
        third,
        Event::TaskDeadLettered {
            task_id: task_id(1),
            expired_leases: MAX_EXPIRED_LEASES,
        }
    );
    let state = log.state.task(task_id(1)).expect("known task");
    assert!(matches!(state.status, TaskStatus::DeadLettered { offset, .. } if offset == dead_at));
    assert_eq!(log.state.counters().dead_lettered, 1);
    assert_eq!(log.state.counters().expired_leases, 2);
    assert_eq!(log.state.unfinished_count(), 0);
}

#[test]
fn a_dead_lettered_task_refuses_claims_extends_and_dones() {
    let mut log = Log::new(1);
    let (token, _) = log.append(&claim(1, 1, T0_MS));
    log.append(&claim(1, 2, T0_MS + LEASE_MS));
    let (_, claim_event) = log.append(&claim(1, 3, T0_MS + 9 * LEASE_MS));
    let (_, extend_event) = log.append(&extend(1, 1, token, T0_MS));
    let (_, done_event) = log.append(&done(1, 1, token, T0_MS));
    assert!(matches!(
        claim_event,
        Event::ClaimLost {
            reason: ClaimLostReason::DeadLettered,
            ..
        }
    ));
    assert!(matches!(
        extend_event,
        Event::ExtendVoid {
            reason: Rejection::DeadLettered,
            ..
        }
    ));
    assert!(matches!(
        done_event,
        Event::DoneFenced {
            reason: Rejection::DeadLettered,
            ..
        }
    ));
}

#[test]
fn a_claim_for_a_task_not_yet_read_is_judged_on_the_claims_log_alone() {
    let mut state = QueueState::new(config(3));
    let event = state
        .apply_claims_record(0, &claim(2, 1, T0_MS))
        .expect("first claims offset");
    assert!(
        matches!(event, Event::ClaimWon { token: 0, .. }),
        "{event:?}"
    );
    // Known from claims only: not offered to workers, who could not run it without its payload.
    assert_eq!(state.claimable(T0_MS + 10 * LEASE_MS).count(), 0);
    state.apply_task(0, &task(2)).expect("first tasks offset");
    assert_eq!(state.lease(task_id(2)).map(|l| l.token), Some(0));
    assert_eq!(
        state.claimable(T0_MS + 10 * LEASE_MS).collect::<Vec<_>>(),
        vec![task_id(2)]
    );
}

#[test]
fn claimable_lists_unfinished_tasks_without_a_live_lease_oldest_first() {
    let mut state = QueueState::new(config(3));
    for n in 1..=4 {
        state.apply_task(n as i64, &task(n)).expect("increasing");
    }
    state
        .apply_claims_record(0, &claim(2, 1, T0_MS))
        .expect("increasing");
    state
        .apply_claims_record(1, &claim(3, 1, T0_MS))
        .expect("increasing");
    state
        .apply_claims_record(2, &done(3, 1, 1, T0_MS))
        .expect("increasing");
    let during_lease: Vec<_> = state.claimable(T0_MS + 1).collect();
    assert_eq!(during_lease, vec![task_id(1), task_id(4)]);
    let after_lease: Vec<_> = state.claimable(T0_MS + LEASE_MS).collect();
    assert_eq!(after_lease, vec![task_id(1), task_id(2), task_id(4)]);
    assert_eq!(state.unfinished_count(), 3);
}

#[test]
fn offsets_that_do_not_increase_are_refused_and_change_nothing() {
    let mut log = Log::new(3);
    log.append(&claim(1, 1, T0_MS));
    let before = log.state.clone();
    let replayed = log.state.apply_claims_record(0, &claim(1, 1, T0_MS));
    assert_eq!(
        replayed,
        Err(ApplyError::OffsetNotIncreasing {
            log: LogName::Claims,
            offset: 0,
            last_offset: 0,
        })
    );
    let negative = log.state.apply_task(-1, &task(9));
    assert_eq!(
        negative,
        Err(ApplyError::NegativeOffset {
            log: LogName::Tasks,
            offset: -1,
        })
    );
    assert_eq!(log.state, before);
}

#[test]
fn a_duplicate_task_record_is_ignored() {
    let mut log = Log::new(3);
    let event = log.state.apply_task(7, &task(1)).expect("increasing");
    assert_eq!(
        event,
        TaskEvent::DuplicateSubmission {
            task_id: task_id(1),
            first_offset: 0,
        }
    );
    assert_eq!(
        log.state
            .task(task_id(1))
            .and_then(|t| t.submission.as_ref())
            .map(|s| s.offset),
        Some(0)
    );
    assert_eq!(log.state.counters().tasks, 1);
    assert_eq!(log.state.counters().duplicate_tasks, 1);
}

#[test]
fn every_claim_is_counted_as_a_win_a_lost_race_or_a_dead_letter() {
    let mut log = Log::new(1);
    log.append(&claim(1, 1, T0_MS)); // wins
    log.append(&claim(1, 2, T0_MS + 1)); // loses
    log.append(&claim(1, 3, T0_MS + LEASE_MS)); // dead-letters
    log.append(&claim(1, 4, T0_MS + LEASE_MS)); // loses
    let counters = log.state.counters();
    assert_eq!(counters.claims, 4);
    assert_eq!(counters.wins, 1);
    assert_eq!(counters.lost_races, 2);
    assert_eq!(counters.dead_lettered, 1);
    assert_eq!(
        counters.claims,
        counters.wins + counters.lost_races + counters.dead_lettered
    );
}

fn release(task: u128, by: u128, token: i64, at_ms: u64) -> ClaimsRecord {
    ClaimsRecord::Release(crate::queue::record::Release {
        task_id: task_id(task),
        worker_id: worker(by),
        token,
        released_at_ms: at_ms,
    })
}

#[test]
fn a_release_by_the_holder_frees_the_task_at_once_without_an_expiry() {
    let mut log = Log::new(1);
    let (token, _) = log.append(&claim(1, 1, T0_MS));
    let (_, released) = log.append(&release(1, 1, token, T0_MS + 1));
    assert_eq!(
        released,
        Event::Released {
            task_id: task_id(1),
            token
        }
    );
    assert!(
        log.state
            .task(task_id(1))
            .unwrap()
            .is_claimable_at(T0_MS + 2)
    );
    // With max_expired_leases = 1, a claim after an expiry would dead-letter the task; after a
    // release it wins.
    let (_, event) = log.append(&claim(1, 2, T0_MS + 2));
    assert!(
        matches!(
            event,
            Event::ClaimWon {
                attempt: 2,
                after_expiry: false,
                ..
            }
        ),
        "{event:?}"
    );
    assert_eq!(log.state.counters().expired_leases, 0);
    assert_eq!(log.state.counters().releases, 1);
}

#[test]
fn a_release_from_anyone_but_the_live_holder_is_void() {
    let mut log = Log::new(3);
    let (token, _) = log.append(&claim(1, 1, T0_MS));
    let void = |event: Event| matches!(event, Event::ReleaseVoid { .. });
    // Another worker with the holder's token, the holder with another token, the holder after
    // its lease lapsed.
    assert!(void(log.append(&release(1, 2, token, T0_MS + 1)).1));
    assert!(void(log.append(&release(1, 1, token + 100, T0_MS + 1)).1));
    assert!(void(log.append(&release(1, 1, token, T0_MS + LEASE_MS)).1));
    assert_eq!(log.state.lease(task_id(1)).map(|l| l.token), Some(token));
    assert_eq!(log.state.counters().void_releases, 3);
}
