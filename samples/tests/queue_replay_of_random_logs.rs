//! Replaying any claims log — random interleavings of claims, extends and dones from several
//! workers with skewed clocks — is deterministic and keeps the queue's promises.

use std::collections::HashMap;
use std::num::NonZeroU32;

use booblik_samples::queue::record::{Claim, ClaimsRecord, Done, Extend, Release, Task};
use booblik_samples::queue::state::{Event, QueueConfig, QueueState};
use booblik_samples::queue::verify::{VerifyConfig, verify};
use proptest::prelude::*;
use uuid::Uuid;

const WORKERS: usize = 4;
const TASKS: usize = 3;
const MAX_OPS: usize = 80;
const MAX_CLOCK_SKEW_MS: i64 = 300;
const T0_MS: u64 = 1_700_000_000_000;

/// Which token an extend or done carries.
#[derive(Debug, Clone)]
enum TokenChoice {
    /// The offset of the writer's own latest claim on the task (what a real worker sends).
    OwnLatest,
    /// The offset of some earlier claim in the log (a confused or stale worker).
    AnyClaim(prop::sample::Index),
    /// A made-up number.
    Arbitrary(i64),
}

#[derive(Debug, Clone)]
enum OpKind {
    Claim,
    Extend(TokenChoice),
    Done(TokenChoice),
    Release(TokenChoice),
    /// The writer of the task's latest claim (often its holder) extends or finishes under that
    /// claim's offset, whatever `Op::worker` says: the common case of a worker doing its job.
    LatestClaimerFollowsUp {
        done: bool,
    },
}

#[derive(Debug, Clone)]
struct Op {
    worker: usize,
    task: usize,
    kind: OpKind,
    /// Real time passing before this record is written.
    advance_ms: u64,
    lease_ms: u64,
}

fn token_choice() -> impl Strategy<Value = TokenChoice> {
    prop_oneof![
        6 => Just(TokenChoice::OwnLatest),
        2 => any::<prop::sample::Index>().prop_map(TokenChoice::AnyClaim),
        1 => (-2_i64..100).prop_map(TokenChoice::Arbitrary),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let kind = prop_oneof![
        4 => Just(OpKind::Claim),
        3 => token_choice().prop_map(OpKind::Extend),
        3 => token_choice().prop_map(OpKind::Done),
        2 => token_choice().prop_map(OpKind::Release),
        4 => prop::bool::weighted(0.25).prop_map(|done| OpKind::LatestClaimerFollowsUp { done }),
    ];
    // Mostly short steps (leases stay live, extends count), sometimes long ones (leases lapse).
    let advance_ms = prop_oneof![4 => 0_u64..100, 1 => 100_u64..1_500];
    (0..WORKERS, 0..TASKS, kind, advance_ms, 100_u64..1_000).prop_map(
        |(worker, task, kind, advance_ms, lease_ms)| Op {
            worker,
            task,
            kind,
            advance_ms,
            lease_ms,
        },
    )
}

/// A random scenario: the tasks log, the claims log, and the verdict parameters.
#[derive(Debug, Clone)]
struct Scenario {
    tasks: Vec<(i64, Task)>,
    claims: Vec<(i64, ClaimsRecord)>,
    config: QueueConfig,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        proptest::collection::vec(-MAX_CLOCK_SKEW_MS..=MAX_CLOCK_SKEW_MS, WORKERS),
        proptest::collection::vec(op(), 0..MAX_OPS),
        1_u32..=4,
    )
        .prop_map(|(skews_ms, ops, max_expired_leases)| {
            let tasks = (0..TASKS)
                .map(|n| {
                    let task = Task {
                        task_id: task_id(n),
                        payload: vec![n as u8],
                        submitted_at_ms: T0_MS,
                    };
                    (n as i64, task)
                })
                .collect();
            Scenario {
                tasks,
                claims: materialize(&skews_ms, &ops),
                config: QueueConfig {
                    max_expired_leases: NonZeroU32::new(max_expired_leases).expect("1..=4"),
                    ..QueueConfig::default()
                },
            }
        })
}

fn task_id(n: usize) -> Uuid {
    Uuid::from_u128(0x7A5C_0000 + n as u128)
}

fn worker_id(n: usize) -> Uuid {
    Uuid::from_u128(0xAAAA_0000 + n as u128)
}

/// Turns abstract operations into claims records, as workers with skewed clocks would write them.
fn materialize(skews_ms: &[i64], ops: &[Op]) -> Vec<(i64, ClaimsRecord)> {
    let mut now_ms = T0_MS;
    let mut claim_offsets = Vec::new();
    let mut own_latest: HashMap<(usize, usize), i64> = HashMap::new();
    let mut latest_claim: HashMap<usize, (usize, i64)> = HashMap::new();
    let mut records = Vec::with_capacity(ops.len());
    for (offset, op) in ops.iter().enumerate() {
        let offset = offset as i64;
        now_ms += op.advance_ms;
        let (writer, follow_up_token) = match (&op.kind, latest_claim.get(&op.task)) {
            (OpKind::LatestClaimerFollowsUp { .. }, Some(&(claimer, token))) => (claimer, token),
            _ => (op.worker, 0),
        };
        let at_ms = now_ms.saturating_add_signed(skews_ms[writer]);
        let token = |choice: &TokenChoice| match choice {
            TokenChoice::OwnLatest => own_latest.get(&(op.worker, op.task)).copied().unwrap_or(0),
            TokenChoice::AnyClaim(index) if !claim_offsets.is_empty() => {
                claim_offsets[index.index(claim_offsets.len())]
            }
            TokenChoice::AnyClaim(_) => 0,
            TokenChoice::Arbitrary(token) => *token,
        };
        let record = match &op.kind {
            OpKind::Claim => {
                claim_offsets.push(offset);
                own_latest.insert((op.worker, op.task), offset);
                latest_claim.insert(op.task, (op.worker, offset));
                ClaimsRecord::Claim(Claim {
                    task_id: task_id(op.task),
                    worker_id: worker_id(op.worker),
                    claimed_at_ms: at_ms,
                    lease_ms: op.lease_ms,
                })
            }
            OpKind::Extend(choice) => ClaimsRecord::Extend(Extend {
                task_id: task_id(op.task),
                worker_id: worker_id(op.worker),
                token: token(choice),
                extended_at_ms: at_ms,
                lease_ms: op.lease_ms,
            }),
            OpKind::Done(choice) => ClaimsRecord::Done(Done {
                task_id: task_id(op.task),
                worker_id: worker_id(op.worker),
                token: token(choice),
                done_at_ms: at_ms,
                result: vec![op.worker as u8],
            }),
            OpKind::Release(choice) => ClaimsRecord::Release(Release {
                task_id: task_id(op.task),
                worker_id: worker_id(op.worker),
                token: token(choice),
                released_at_ms: at_ms,
            }),
            OpKind::LatestClaimerFollowsUp { done: false } => ClaimsRecord::Extend(Extend {
                task_id: task_id(op.task),
                worker_id: worker_id(writer),
                token: follow_up_token,
                extended_at_ms: at_ms,
                lease_ms: op.lease_ms,
            }),
            OpKind::LatestClaimerFollowsUp { done: true } => ClaimsRecord::Done(Done {
                task_id: task_id(op.task),
                worker_id: worker_id(writer),
                token: follow_up_token,
                done_at_ms: at_ms,
                result: vec![writer as u8],
            }),
        };
        records.push((offset, record));
    }
    records
}

/// Applies the tasks log first, then the claims log.
fn replay_tasks_first(scenario: &Scenario) -> (QueueState, Vec<Event>) {
    let mut state = QueueState::new(scenario.config);
    for (offset, task) in &scenario.tasks {
        state.apply_task(*offset, task).expect("increasing offsets");
    }
    let events = scenario
        .claims
        .iter()
        .map(|(offset, record)| {
            state
                .apply_claims_record(*offset, record)
                .expect("increasing offsets")
        })
        .collect();
    (state, events)
}

/// Applies the claims log first, then the tasks log: a reader whose tasks follower lags.
fn replay_claims_first(scenario: &Scenario) -> (QueueState, Vec<Event>) {
    let mut state = QueueState::new(scenario.config);
    let events = scenario
        .claims
        .iter()
        .map(|(offset, record)| {
            state
                .apply_claims_record(*offset, record)
                .expect("increasing offsets")
        })
        .collect();
    for (offset, task) in &scenario.tasks {
        state.apply_task(*offset, task).expect("increasing offsets");
    }
    (state, events)
}

proptest! {
    #[test]
    fn replaying_the_same_logs_twice_gives_identical_verdicts_and_state(scenario in scenario()) {
        let (first_state, first_events) = replay_tasks_first(&scenario);
        let (second_state, second_events) = replay_tasks_first(&scenario);
        prop_assert_eq!(&first_events, &second_events);
        prop_assert_eq!(&first_state, &second_state);
    }

    #[test]
    fn verdicts_do_not_depend_on_how_far_the_tasks_log_has_been_read(scenario in scenario()) {
        let (tasks_first_state, tasks_first_events) = replay_tasks_first(&scenario);
        let (claims_first_state, claims_first_events) = replay_claims_first(&scenario);
        prop_assert_eq!(&tasks_first_events, &claims_first_events);
        prop_assert_eq!(&tasks_first_state, &claims_first_state);
    }

    #[test]
    fn at_most_one_done_per_task_is_accepted_and_it_carries_the_latest_winning_token(
        scenario in scenario(),
    ) {
        let (_, events) = replay_tasks_first(&scenario);
        let mut latest_win: HashMap<Uuid, i64> = HashMap::new();
        let mut accepted: HashMap<Uuid, i64> = HashMap::new();
        for ((offset, record), event) in scenario.claims.iter().zip(&events) {
            match event {
                Event::ClaimWon { task_id, token, .. } => {
                    prop_assert_eq!(*token, *offset);
                    latest_win.insert(*task_id, *token);
                }
                Event::DoneAccepted { task_id, token } => {
                    prop_assert!(
                        accepted.insert(*task_id, *token).is_none(),
                        "second accepted done for {} at offset {}", task_id, offset
                    );
                    prop_assert_eq!(latest_win.get(task_id), Some(token));
                    let ClaimsRecord::Done(done) = record else {
                        return Err(TestCaseError::fail("a done verdict on a non-done record"));
                    };
                    prop_assert_eq!(done.token, *token);
                }
                _ => {}
            }
        }
    }

    #[test]
    fn the_verifier_finds_no_violation_in_a_replayed_log(scenario in scenario()) {
        let config = VerifyConfig {
            queue: scenario.config,
            as_of_ms: T0_MS,
            // Random logs stop anywhere; unfinished tasks are pending here, not lost.
            lost_after_ms: u64::MAX,
        };
        let report = verify(&scenario.tasks, &scenario.claims, &config);
        prop_assert!(report.is_clean(), "{:#?}", report.violations);
        let summary = &report.summary;
        prop_assert_eq!(
            summary.completed + summary.dead_lettered + summary.in_flight + summary.pending
                + summary.lost,
            summary.tasks
        );
        // Every task is submitted here, so every dead-lettering is counted in `dead_lettered`.
        prop_assert_eq!(summary.claims, summary.wins + summary.lost_races + summary.dead_lettered);
        prop_assert_eq!(summary.duplicate_effects, 0);
    }
}
