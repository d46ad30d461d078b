//! With `Pick::Rendezvous`, workers over a backlog almost never lose a race: each claims the
//! tasks it ranks first among the idle live workers, and every worker computes the same ranks
//! from the same log. `Pick::Random` over the same backlog, for contrast, loses races whenever
//! two workers draw the same task — more and more as the backlog drains.
//!
//! A deterministic state-level simulation, not a timed test: in every round each idle worker
//! picks from the same `QueueState` at the same clock reading (the worst case for collisions:
//! perfectly level views), then all claims are applied in worker order and every winner's done
//! right after. A rendezvous worker whose pick is not its own defers, for at most
//! `DEFERENCE_ROUNDS` rounds in a row, then claims the task it ranks best, as the worker does
//! after `RENDEZVOUS_MAX_DEFERENCE_MS`.

use booblik_samples::queue::pick::Pick;
use booblik_samples::queue::record::{Claim, ClaimsRecord, Done, Heartbeat, Task};
use booblik_samples::queue::state::{QueueConfig, QueueState};
use rand::SeedableRng;
use rand::rngs::StdRng;
use uuid::Uuid;

const WORKERS: u128 = 8;
const TASKS: u128 = 400;
const LEASE_MS: u64 = 10_000;
const T0_MS: u64 = 1_700_000_000_000;
const DEFERENCE_ROUNDS: u32 = 3;
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

fn drain(pick: Pick) -> Outcome {
    let mut state = QueueState::new(QueueConfig::default());
    for n in 0..TASKS {
        let task = Task {
            task_id: Uuid::from_u128(0x7A5C_0000 + n),
            payload: vec![],
            submitted_at_ms: T0_MS,
        };
        state.apply_task(n as i64, &task).unwrap();
    }
    let mut offset = 0_i64;
    let mut append = |state: &mut QueueState, record: ClaimsRecord| {
        let event = state.apply_claims_record(offset, &record).unwrap();
        offset += 1;
        (offset - 1, event)
    };
    // Every worker is idle and has said so.
    for n in 0..WORKERS {
        let heartbeat = Heartbeat {
            worker_id: worker(n),
            at_ms: T0_MS,
            lease_ms: LEASE_MS,
        };
        append(&mut state, heartbeat.into());
    }
    assert_eq!(state.live_workers(T0_MS).len(), WORKERS as usize);

    let mut rngs: Vec<StdRng> = (0..WORKERS)
        .map(|n| StdRng::seed_from_u64(n as u64))
        .collect();
    let mut deferred_rounds = vec![0_u32; WORKERS as usize];
    for round in 0..MAX_ROUNDS {
        if state.unfinished_count() == 0 {
            break;
        }
        let now_ms = T0_MS + 1 + round;
        // Everyone picks from the same view first ...
        let mut claims = Vec::new();
        for n in 0..WORKERS {
            let rng = &mut rngs[n as usize];
            let task_id = match pick {
                Pick::Rendezvous => {
                    let Some(ranked) = state.rendezvous_pick(now_ms, worker(n), rng) else {
                        continue;
                    };
                    let deferred = &mut deferred_rounds[n as usize];
                    if !ranked.ranked_first && *deferred < DEFERENCE_ROUNDS {
                        *deferred += 1;
                        continue;
                    }
                    *deferred = 0;
                    ranked.task_id
                }
                other => match state.pick(now_ms, other, rng) {
                    Some(task_id) => task_id,
                    None => continue,
                },
            };
            claims.push((n, task_id));
        }
        // ... then the claims land in worker order, and each winner finishes at once.
        let mut winners = Vec::new();
        for (n, task_id) in claims {
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
            append(&mut state, done.into());
        }
    }
    let counters = state.counters();
    Outcome {
        claims: counters.claims,
        lost_races: counters.lost_races,
        completed: counters.dones_accepted,
    }
}

#[test]
fn rendezvous_workers_drain_a_backlog_with_almost_no_lost_races() {
    let rendezvous = drain(Pick::Rendezvous);
    let random = drain(Pick::Random);
    eprintln!(
        "rendezvous: {} claims, {} lost; random: {} claims, {} lost",
        rendezvous.claims, rendezvous.lost_races, random.claims, random.lost_races
    );
    assert_eq!(rendezvous.completed, TASKS as u64);
    assert_eq!(random.completed, TASKS as u64);
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
