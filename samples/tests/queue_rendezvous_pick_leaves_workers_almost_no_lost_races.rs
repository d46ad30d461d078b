//! With `Pick::Rendezvous`, workers over a backlog almost never lose a race: each claims the
//! tasks it ranks first among the idle live workers, and every worker computes the same ranks
//! from the same log. `Pick::Random` over the same backlog, for contrast, loses races whenever
//! two workers draw the same task — more and more as the backlog drains.
//!
//! A deterministic state-level simulation, not a timed test: in every round (one millisecond of
//! the simulated clock) each idle worker picks from the same `QueueState` at the same clock
//! reading (the worst case for collisions: perfectly level views), then all claims are applied in
//! worker order and every winner's done right after. A rendezvous worker whose pick is not its
//! own defers through the worker's own rule (`Deference`, `pick/deference.rs`) with a bound of
//! `DEFERENCE_ROUNDS` rounds, as the worker does with `RENDEZVOUS_MAX_DEFERENCE_MS`.
//!
//! Two arrival patterns: a backlog submitted up front, and a trickle where one task arrives into
//! an idle queue every `TRICKLE_EVERY_ROUNDS` rounds — where every idle worker sees the same one
//! task, `Random` loses a race for all but one of them, and a deference clock that outlives the
//! task it was started for makes rendezvous workers do the same.

use booblik_samples::queue::pick::{Decision, Deference, Pick};
use booblik_samples::queue::record::{Claim, ClaimsRecord, Done, Heartbeat, Task};
use booblik_samples::queue::state::{QueueConfig, QueueState};
use rand::SeedableRng;
use rand::rngs::StdRng;
use uuid::Uuid;

const BACKLOG_WORKERS: u128 = 8;
const BACKLOG_TASKS: u128 = 400;
const TRICKLE_WORKERS: u128 = 30;
const TRICKLE_TASKS: u128 = 100;
/// Far longer than a claim takes in the simulation (the round it is picked in).
const TRICKLE_EVERY_ROUNDS: u64 = 50;
const LEASE_MS: u64 = 10_000;
const T0_MS: u64 = 1_700_000_000_000;
const DEFERENCE_ROUNDS: u64 = 3;
/// Far more rounds than draining needs: a simulation that stops making progress fails.
const MAX_ROUNDS: u64 = 10_000;

fn worker(n: u128) -> Uuid {
    Uuid::from_u128(0xAAAA_0000 + n)
}

struct Outcome {
    claims: u64,
    lost_races: u64,
    completed: u64,
}

/// When tasks arrive.
#[derive(Clone, Copy)]
enum Arrival {
    /// All at once, before the first round.
    Backlog,
    /// One every `TRICKLE_EVERY_ROUNDS` rounds.
    Trickle,
}

/// When a worker sends the done of the task it finished.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dones {
    /// Right after its claim won (the worker finishes within the round and says so).
    Alone,
    /// Together with its next claim, as the worker does by default: until then it holds the
    /// lease, so the log never shows it idle. A worker that does not claim in a round (it
    /// defers, or nothing is claimable) sends its done on its own, as the worker does before
    /// it waits.
    WithNextClaim,
}

fn drain(pick: Pick, workers: u128, tasks: u128, arrival: Arrival, dones: Dones) -> Outcome {
    let mut state = QueueState::new(QueueConfig::default());
    let mut submitted = 0_u128;
    let submit = |state: &mut QueueState, submitted: &mut u128, submitted_at_ms: u64| {
        let task = Task {
            task_id: Uuid::from_u128(0x7A5C_0000 + *submitted),
            payload: vec![],
            submitted_at_ms,
        };
        state.apply_task(*submitted as i64, &task).unwrap();
        *submitted += 1;
    };
    if let Arrival::Backlog = arrival {
        for _ in 0..tasks {
            submit(&mut state, &mut submitted, T0_MS);
        }
    }
    let mut offset = 0_i64;
    let mut append = |state: &mut QueueState, record: ClaimsRecord| {
        let event = state.apply_claims_record(offset, &record).unwrap();
        offset += 1;
        (offset - 1, event)
    };
    // Every worker is idle and has said so.
    for n in 0..workers {
        let heartbeat = Heartbeat {
            worker_id: worker(n),
            at_ms: T0_MS,
            lease_ms: LEASE_MS,
        };
        append(&mut state, heartbeat.into());
    }
    assert_eq!(state.live_workers(T0_MS).len(), workers as usize);

    let mut rngs: Vec<StdRng> = (0..workers)
        .map(|n| StdRng::seed_from_u64(n as u64))
        .collect();
    let mut deferences = vec![Deference::new(DEFERENCE_ROUNDS); workers as usize];
    let mut pending_dones: Vec<Option<Done>> = vec![None; workers as usize];
    for round in 0..MAX_ROUNDS {
        let now_ms = T0_MS + 1 + round;
        if let Arrival::Trickle = arrival
            && round % TRICKLE_EVERY_ROUNDS == 0
            && submitted < tasks
        {
            submit(&mut state, &mut submitted, now_ms);
        }
        if submitted == tasks && state.unfinished_count() == 0 {
            break;
        }
        // Everyone picks from the same view first ...
        let mut claims = Vec::new();
        for n in 0..workers {
            let rng = &mut rngs[n as usize];
            let task_id = match pick {
                Pick::Rendezvous => {
                    let deference = &mut deferences[n as usize];
                    let Some(ranked) = state.rendezvous_pick(now_ms, worker(n), rng) else {
                        deference.nothing_claimable();
                        continue;
                    };
                    if let Decision::Wait { .. } = deference.decide(&ranked, now_ms) {
                        continue;
                    }
                    ranked.task_id
                }
                other => match state.pick(now_ms, other, rng) {
                    Some(task_id) => task_id,
                    None => continue,
                },
            };
            claims.push((n, task_id));
        }
        // Workers that do not claim this round send their pending done on its own.
        for n in 0..workers {
            if !claims.iter().any(|&(claimer, _)| claimer == n)
                && let Some(done) = pending_dones[n as usize].take()
            {
                append(&mut state, done.into());
            }
        }
        // ... then the claims land in worker order (each after its writer's pending done), and
        // each winner finishes at once.
        let mut winners = Vec::new();
        for (n, task_id) in claims {
            if let Some(done) = pending_dones[n as usize].take() {
                append(&mut state, done.into());
            }
            let claim = Claim {
                task_id,
                worker_id: worker(n),
                claimed_at_ms: now_ms,
                lease_ms: LEASE_MS,
            };
            let (token, event) = append(&mut state, claim.into());
            if matches!(event, booblik_samples::queue::state::Event::ClaimWon { .. }) {
                winners.push((n, task_id, token));
            }
        }
        for (n, task_id, token) in winners {
            let done = Done {
                task_id,
                worker_id: worker(n),
                token,
                done_at_ms: now_ms,
                result: vec![],
            };
            match dones {
                Dones::Alone => {
                    append(&mut state, done.into());
                }
                Dones::WithNextClaim => pending_dones[n as usize] = Some(done),
            }
        }
    }
    let counters = state.counters();
    Outcome {
        claims: counters.claims,
        lost_races: counters.lost_races,
        completed: counters.dones_accepted,
    }
}

/// Drains the same queue with `Rendezvous` and with `Random` (same seeds), checks both complete
/// every task, and returns their outcomes in that order.
fn drain_both(
    label: &str,
    workers: u128,
    tasks: u128,
    arrival: Arrival,
    dones: Dones,
) -> (Outcome, Outcome) {
    let rendezvous = drain(Pick::Rendezvous, workers, tasks, arrival, dones);
    let random = drain(Pick::Random, workers, tasks, arrival, dones);
    eprintln!(
        "{label}: rendezvous: {} claims, {} lost; random: {} claims, {} lost",
        rendezvous.claims, rendezvous.lost_races, random.claims, random.lost_races
    );
    assert_eq!(rendezvous.completed, tasks as u64);
    assert_eq!(random.completed, tasks as u64);
    (rendezvous, random)
}

#[test]
fn rendezvous_workers_drain_a_backlog_with_almost_no_lost_races() {
    let (rendezvous, random) = drain_both(
        "backlog",
        BACKLOG_WORKERS,
        BACKLOG_TASKS,
        Arrival::Backlog,
        Dones::Alone,
    );
    // At most 1 % of claims lost (the target for 3 workers in issue 19), where random loses
    // many times more from the same start.
    assert!(
        rendezvous.lost_races * 100 <= rendezvous.claims,
        "rendezvous lost {} of {} claims",
        rendezvous.lost_races,
        rendezvous.claims
    );
    assert!(
        random.lost_races > 5 * rendezvous.lost_races.max(1),
        "random lost {}, rendezvous {}",
        random.lost_races,
        rendezvous.lost_races
    );
}

#[test]
fn rendezvous_workers_leave_each_trickled_task_to_its_owner() {
    let (rendezvous, random) = drain_both(
        "trickle",
        TRICKLE_WORKERS,
        TRICKLE_TASKS,
        Arrival::Trickle,
        Dones::Alone,
    );
    // Issue 19's trickle target at 30 workers is 10 %; in level views every owner claims its
    // task in the round it arrives, so nobody else should have raced it.
    assert!(
        rendezvous.lost_races * 10 <= rendezvous.claims,
        "rendezvous lost {} of {} claims",
        rendezvous.lost_races,
        rendezvous.claims
    );
    // Random: every idle worker goes for the one task.
    assert!(
        random.lost_races >= (TRICKLE_WORKERS as u64 - 1) * TRICKLE_TASKS as u64 / 2,
        "random lost only {} of {} claims",
        random.lost_races,
        random.claims
    );
}

#[test]
fn rendezvous_workers_whose_dones_ride_with_their_next_claims_drain_a_backlog_with_few_lost_races()
{
    let (rendezvous, random) = drain_both(
        "backlog, dones with the next claim",
        BACKLOG_WORKERS,
        BACKLOG_TASKS,
        Arrival::Backlog,
        Dones::WithNextClaim,
    );
    // Ranked over the idle workers alone, every worker would rank first for every task (none
    // looks idle) and lose as many races as random. In these level views the last tasks still
    // cost some: a worker that deferred sends its done alone and looks idle to the others,
    // while a worker holding its lease counts itself, so their ranks disagree.
    assert!(
        rendezvous.lost_races * 2 <= random.lost_races,
        "rendezvous lost {} of {} claims, random {} of {}",
        rendezvous.lost_races,
        rendezvous.claims,
        random.lost_races,
        random.claims
    );
}
