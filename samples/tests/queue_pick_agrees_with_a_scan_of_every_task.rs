//! The index behind picking (`QueueState::candidates` with its positions and windows, `pick`,
//! `claimable`, `next_lapse_after`) gives the same answers as a plain scan of every task with
//! `TaskState::is_claimable_at`, after any sequence of submissions, claims, extends and dones, at
//! any clock reading.

use std::collections::HashSet;
use std::num::NonZeroU32;

use booblik_samples::queue::pick::Pick;
use booblik_samples::queue::record::{Claim, ClaimsRecord, Done, Extend, Task};
use booblik_samples::queue::state::{QueueConfig, QueueState, TaskState};
use proptest::prelude::*;
use rand::SeedableRng;
use rand::rngs::StdRng;
use uuid::Uuid;

const TASKS: usize = 6;
const WORKERS: usize = 3;
const MAX_STEPS: usize = 60;
const MAX_CLOCK_SKEW_MS: i64 = 300;
const T0_MS: u64 = 1_700_000_000_000;

#[derive(Debug, Clone)]
enum Op {
    /// A task record (again, if the task was submitted already: a duplicate).
    Submit,
    /// A claim by `worker`.
    Claim,
    /// An extend; by the current holder under its token if `by_holder`, else by `worker` under
    /// the current token (a forged or confused record).
    Extend { by_holder: bool },
    /// A done, chosen like an extend.
    Done { by_holder: bool },
}

#[derive(Debug, Clone)]
struct Step {
    op: Op,
    task: usize,
    worker: usize,
    /// Real time passing before the record is written; long steps let leases lapse.
    advance_ms: u64,
    lease_ms: u64,
    /// A clock reading to check at, relative to the current time.
    probe_ms: i64,
}

fn step() -> impl Strategy<Value = Step> {
    let op = prop_oneof![
        2 => Just(Op::Submit),
        4 => Just(Op::Claim),
        3 => prop::bool::weighted(0.8).prop_map(|by_holder| Op::Extend { by_holder }),
        2 => prop::bool::weighted(0.8).prop_map(|by_holder| Op::Done { by_holder }),
    ];
    let advance_ms = prop_oneof![4 => 0_u64..100, 1 => 100_u64..1_500];
    (
        op,
        0..TASKS,
        0..WORKERS,
        advance_ms,
        100_u64..1_000,
        -1_500_i64..1_500,
    )
        .prop_map(|(op, task, worker, advance_ms, lease_ms, probe_ms)| Step {
            op,
            task,
            worker,
            advance_ms,
            lease_ms,
            probe_ms,
        })
}

fn task_id(n: usize) -> Uuid {
    Uuid::from_u128(0x7A5C_0000 + n as u128)
}

fn worker_id(n: usize) -> Uuid {
    Uuid::from_u128(0xAAAA_0000 + n as u128)
}

/// The claimable tasks at `now_ms` by the definition: a scan of every task, oldest first.
fn scanned(state: &QueueState, now_ms: u64) -> Vec<Uuid> {
    let mut claimable: Vec<(i64, Uuid)> = state
        .tasks()
        .filter(|task| task.is_claimable_at(now_ms))
        .map(|task| (submission_offset(task), task.task_id))
        .collect();
    claimable.sort_unstable();
    claimable.into_iter().map(|(_, task_id)| task_id).collect()
}

fn submission_offset(task: &TaskState) -> i64 {
    task.submission
        .as_ref()
        .expect("claimable tasks are submitted")
        .offset
}

/// The next lapse after `now_ms` by the definition: a scan of every submitted task's lease.
fn scanned_next_lapse_after(state: &QueueState, now_ms: u64) -> Option<u64> {
    state
        .tasks()
        .filter(|task| task.submission.is_some())
        .filter_map(TaskState::lease)
        .map(|lease| lease.expires_at_ms)
        .filter(|&expires_at_ms| expires_at_ms > now_ms)
        .min()
}

/// Checks every answer of the index at `now_ms` against the scan.
fn check_at(state: &QueueState, now_ms: u64, rng: &mut StdRng) -> Result<(), TestCaseError> {
    let expected = scanned(state, now_ms);
    prop_assert_eq!(
        state.claimable(now_ms).collect::<Vec<_>>(),
        expected.clone()
    );

    let candidates = state.candidates(now_ms);
    prop_assert_eq!(candidates.len(), expected.len());
    // Positions 0..len name every candidate exactly once: a uniform position is a uniform task.
    let by_position: Vec<Uuid> = (0..candidates.len())
        .map(|position| candidates.at(position).expect("position below len"))
        .collect();
    prop_assert_eq!(
        by_position.iter().copied().collect::<HashSet<_>>(),
        expected.iter().copied().collect::<HashSet<_>>()
    );
    prop_assert_eq!(by_position.len(), expected.len());
    prop_assert_eq!(candidates.at(candidates.len()), None);
    // A window is the positions from its start on, wrapping: the same tasks `at` names there,
    // from every start and of every width (what the rendezvous scan walks).
    for start in 0..candidates.len() {
        for count in 0..=candidates.len() + 1 {
            let window: Vec<Uuid> = candidates.window(start, count).collect();
            let at: Vec<Uuid> = (0..count.min(candidates.len()))
                .map(|step| by_position[(start + step) % candidates.len()])
                .collect();
            prop_assert_eq!(window, at);
        }
    }

    prop_assert_eq!(
        state.pick(now_ms, Pick::First, rng),
        expected.first().copied()
    );
    let random = state.pick(now_ms, Pick::Random, rng);
    prop_assert_eq!(random.is_some(), !expected.is_empty());
    prop_assert!(random.is_none_or(|task_id| expected.contains(&task_id)));

    prop_assert_eq!(
        state.next_lapse_after(now_ms),
        scanned_next_lapse_after(state, now_ms)
    );
    Ok(())
}

/// Clock readings worth checking: the probe, and both sides of every current lease's expiry.
fn probes(state: &QueueState, now_ms: u64, probe_ms: i64) -> Vec<u64> {
    let mut probes = vec![0, u64::MAX, now_ms.saturating_add_signed(probe_ms)];
    for lease in state.tasks().filter_map(TaskState::lease) {
        let expires_at_ms = lease.expires_at_ms;
        probes.extend([
            expires_at_ms.saturating_sub(1),
            expires_at_ms,
            expires_at_ms.saturating_add(1),
        ]);
    }
    probes
}

/// The record `step` stands for, given what the state says now.
fn record(state: &QueueState, step: &Step, at_ms: u64) -> ClaimsRecord {
    let task = task_id(step.task);
    let lease = state.lease(task);
    let (worker, token) = match (&step.op, lease) {
        (Op::Extend { by_holder: true } | Op::Done { by_holder: true }, Some(lease)) => {
            (lease.worker_id, lease.token)
        }
        (_, lease) => (worker_id(step.worker), lease.map_or(0, |lease| lease.token)),
    };
    match step.op {
        // A submission is a tasks record; the caller never asks for one here.
        Op::Submit | Op::Claim => ClaimsRecord::Claim(Claim {
            task_id: task,
            worker_id: worker,
            claimed_at_ms: at_ms,
            lease_ms: step.lease_ms,
        }),
        Op::Extend { .. } => ClaimsRecord::Extend(Extend {
            task_id: task,
            worker_id: worker,
            token,
            extended_at_ms: at_ms,
            lease_ms: step.lease_ms,
        }),
        Op::Done { .. } => ClaimsRecord::Done(Done {
            task_id: task,
            worker_id: worker,
            token,
            done_at_ms: at_ms,
            result: vec![],
        }),
    }
}

proptest! {
    #[test]
    fn every_pick_agrees_with_a_scan_of_every_task(
        steps in proptest::collection::vec(step(), 0..MAX_STEPS),
        skews_ms in proptest::collection::vec(-MAX_CLOCK_SKEW_MS..=MAX_CLOCK_SKEW_MS, WORKERS),
        max_expired_leases in 1_u32..=3,
        seed in any::<u64>(),
    ) {
        let mut state = QueueState::new(QueueConfig {
            max_expired_leases: NonZeroU32::new(max_expired_leases).expect("1..=3"),
            ..QueueConfig::default()
        });
        let mut rng = StdRng::seed_from_u64(seed);
        let mut now_ms = T0_MS;
        let mut tasks_offset = 0;
        let mut claims_offset = 0;
        for step in &steps {
            now_ms += step.advance_ms;
            if let Op::Submit = step.op {
                let task = Task {
                    task_id: task_id(step.task),
                    payload: vec![],
                    submitted_at_ms: now_ms,
                };
                state.apply_task(tasks_offset, &task).expect("increasing offsets");
                tasks_offset += 1;
            } else {
                let at_ms = now_ms.saturating_add_signed(skews_ms[step.worker]);
                let record = record(&state, step, at_ms);
                state.apply_claims_record(claims_offset, &record).expect("increasing offsets");
                claims_offset += 1;
            }
            for probe_ms in probes(&state, now_ms, step.probe_ms) {
                check_at(&state, probe_ms, &mut rng)?;
            }
            let open = state
                .tasks()
                .filter(|task| task.submission.is_some() && !task.is_finished())
                .count();
            prop_assert_eq!(state.unfinished_count(), open);
        }
    }
}
