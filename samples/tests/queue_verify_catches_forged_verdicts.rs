//! The verifier does not simply trust the state machine: fed a trace of forged verdicts — what a
//! buggy state machine would produce — it reports the broken promises.

use booblik_samples::queue::record::{Claim, ClaimsRecord, Done, Task};
use booblik_samples::queue::state::{Event, QueueConfig};
use booblik_samples::queue::verify::{
    TraceStep, VerdictKind, VerifyConfig, Violation, replay, verify_trace,
};
use uuid::Uuid;

const LEASE_MS: u64 = 1_000;
const T0_MS: u64 = 1_700_000_000_000;

fn task_id() -> Uuid {
    Uuid::from_u128(0x7A5C)
}

fn worker(n: u128) -> Uuid {
    Uuid::from_u128(0xAAAA_0000 + n)
}

fn tasks() -> Vec<(i64, Task)> {
    vec![(
        0,
        Task {
            task_id: task_id(),
            payload: b"work".to_vec(),
            submitted_at_ms: T0_MS,
        },
    )]
}

fn claim(by: u128, at_ms: u64) -> ClaimsRecord {
    ClaimsRecord::Claim(Claim {
        task_id: task_id(),
        worker_id: worker(by),
        claimed_at_ms: at_ms,
        lease_ms: LEASE_MS,
    })
}

fn done(by: u128, token: i64, at_ms: u64) -> ClaimsRecord {
    ClaimsRecord::Done(Done {
        task_id: task_id(),
        worker_id: worker(by),
        token,
        done_at_ms: at_ms,
        result: vec![by as u8],
    })
}

fn config() -> VerifyConfig {
    VerifyConfig {
        queue: QueueConfig::default(),
        as_of_ms: T0_MS + 100 * LEASE_MS,
        lost_after_ms: 0,
    }
}

/// The honest trace of `claims`, then with the verdicts at `forged` replaced.
fn forge(claims: &[(i64, ClaimsRecord)], forged: &[(usize, Event)]) -> Vec<TraceStep> {
    let (_, mut trace, violations) = replay(&tasks(), claims, QueueConfig::default());
    assert!(violations.is_empty(), "{violations:?}");
    for (index, event) in forged {
        trace[*index].event = event.clone();
    }
    trace
}

#[test]
fn a_task_completed_twice_under_different_tokens_is_flagged() {
    // Worker 1 wins and completes; worker 2's late claim must lose and its done be fenced.
    // The forgery makes both win and both dones count.
    let claims = vec![
        (0, claim(1, T0_MS)),
        (1, done(1, 0, T0_MS + 10)),
        (2, claim(2, T0_MS + 2 * LEASE_MS)),
        (3, done(2, 2, T0_MS + 2 * LEASE_MS + 10)),
    ];
    let honest = verify_trace(&tasks(), &forge(&claims, &[]), &config());
    assert!(honest.is_clean(), "{:#?}", honest.violations);

    let trace = forge(
        &claims,
        &[
            (
                2,
                Event::ClaimWon {
                    task_id: task_id(),
                    worker_id: worker(2),
                    token: 2,
                    expires_at_ms: T0_MS + 3 * LEASE_MS,
                    attempt: 2,
                    after_expiry: true,
                },
            ),
            (
                3,
                Event::DoneAccepted {
                    task_id: task_id(),
                    token: 2,
                },
            ),
        ],
    );
    let report = verify_trace(&tasks(), &trace, &config());
    assert!(
        report.violations.contains(&Violation::CompletedTwice {
            offset: 3,
            task_id: task_id(),
            first_token: 0,
            second_token: 2,
        }),
        "{:#?}",
        report.violations
    );
    assert!(
        report
            .violations
            .iter()
            .any(|violation| matches!(violation, Violation::ActivityAfterFinish { offset: 2, .. }))
    );
    assert!(report.violations.iter().any(|violation| matches!(
        violation,
        Violation::VerdictDisagreement {
            offset: 3,
            expected: VerdictKind::DoneFenced,
            ..
        }
    )));
    assert_eq!(report.summary.duplicate_effects, 1);
    assert_eq!(report.summary.completed, 1);
}

#[test]
fn a_done_counted_without_the_current_token_is_flagged() {
    // Worker 2 legitimately took over the expired lease; worker 1's late done must be fenced.
    let claims = vec![
        (0, claim(1, T0_MS)),
        (1, claim(2, T0_MS + LEASE_MS)),
        (2, done(1, 0, T0_MS + LEASE_MS + 10)),
    ];
    let trace = forge(
        &claims,
        &[(
            2,
            Event::DoneAccepted {
                task_id: task_id(),
                token: 0,
            },
        )],
    );
    let report = verify_trace(&tasks(), &trace, &config());
    assert!(
        report
            .violations
            .contains(&Violation::DoneWithoutCurrentToken {
                offset: 2,
                task_id: task_id(),
                token: 0,
                current_token: Some(1),
            }),
        "{:#?}",
        report.violations
    );
}

#[test]
fn a_claim_winning_against_a_live_lease_is_flagged() {
    let claims = vec![(0, claim(1, T0_MS)), (1, claim(2, T0_MS + LEASE_MS / 2))];
    let trace = forge(
        &claims,
        &[(
            1,
            Event::ClaimWon {
                task_id: task_id(),
                worker_id: worker(2),
                token: 1,
                expires_at_ms: T0_MS + LEASE_MS / 2 + LEASE_MS,
                attempt: 2,
                after_expiry: true,
            },
        )],
    );
    let report = verify_trace(&tasks(), &trace, &config());
    assert!(
        report.violations.contains(&Violation::LeaseOverlap {
            offset: 1,
            task_id: task_id(),
            claimed_at_ms: T0_MS + LEASE_MS / 2,
            previous_token: 0,
            previous_expires_at_ms: T0_MS + LEASE_MS,
        }),
        "{:#?}",
        report.violations
    );
}

#[test]
fn a_verdict_that_does_not_fit_its_record_is_flagged() {
    let claims = vec![(0, claim(1, T0_MS))];
    let trace = forge(
        &claims,
        &[(
            0,
            Event::DoneAccepted {
                task_id: task_id(),
                token: 0,
            },
        )],
    );
    let report = verify_trace(&tasks(), &trace, &config());
    assert!(report.violations.iter().any(|violation| matches!(
        violation,
        Violation::EventDoesNotMatchRecord { offset: 0, .. }
    )));
}
