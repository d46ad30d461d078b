//! Which claimable task a worker goes for.
//!
//! Every worker sees the same claimable set. If they all pick the *first* candidate they all
//! claim the same task, and all but one claim lose the race: wasted round trips that grow with
//! the number of workers. Picking uniformly at random among the candidates spreads the workers
//! over the backlog, so collisions become rare while the backlog is much larger than the number
//! of workers. `First` stays available because the load experiment measures the difference.
//!
//! A worker picks before every claim, so a pick must not cost a pass over the backlog: `First`
//! and `Random` ask the index behind [`Candidates`] for one answer (the oldest task, or the task
//! at one random position) instead of walking the claimable tasks; `Rendezvous` ranks at most
//! [`RENDEZVOUS_SCAN`] of them ([`rendezvous`]).
//!
//! | file | what it is |
//! |---|---|
//! | `mod.rs` | [`Pick`]: `First`, `Random` |
//! | `rendezvous.rs` | `Rendezvous`: each worker its own order, by rendezvous hashing over the idle live workers |
//! | `deference.rs` | how long a rendezvous worker leaves a task to its owner before claiming it anyway |

pub mod deference;
pub mod rendezvous;

pub use deference::{Decision, Deference};
pub use rendezvous::{RENDEZVOUS_SCAN, Ranked};

use rand::Rng;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::queue::state::Candidates;

/// A strategy for choosing one task among the claimable ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Pick {
    /// The oldest candidate (lowest offset in `tasks`). Deterministic; collides when workers
    /// share a view.
    First,
    /// A uniformly random candidate.
    Random,
    /// The candidate the worker ranks first by rendezvous hashing over the idle live workers
    /// ([`rendezvous`]), deferring a bounded time to a task's owner otherwise. Needs heartbeats
    /// (protocol level 2), so that idle workers count as live. Without a worker's identity (in
    /// [`Pick::choose`]) it picks like `Random`.
    Rendezvous,
}

impl Pick {
    /// Chooses one of `candidates`, or `None` if there are none. `rng` is only used by
    /// [`Pick::Random`], which draws a position below [`Candidates::len`]: every candidate has
    /// exactly one position, so each is equally likely.
    ///
    /// ```
    /// use booblik_samples::queue::pick::Pick;
    /// use booblik_samples::queue::record::Task;
    /// use booblik_samples::queue::state::{QueueConfig, QueueState};
    /// use uuid::Uuid;
    ///
    /// let ids = [Uuid::from_u128(1), Uuid::from_u128(2)];
    /// let mut state = QueueState::new(QueueConfig::default());
    /// for (offset, &task_id) in ids.iter().enumerate() {
    ///     let task = Task { task_id, payload: vec![], submitted_at_ms: 0 };
    ///     state.apply_task(offset as i64, &task).unwrap();
    /// }
    /// let candidates = state.candidates(0);
    /// let mut rng = rand::rng();
    /// assert_eq!(Pick::First.choose(&candidates, &mut rng), Some(ids[0]));
    /// assert!(Pick::Random.choose(&candidates, &mut rng).is_some_and(|id| ids.contains(&id)));
    /// ```
    pub fn choose<R>(self, candidates: &Candidates<'_>, rng: &mut R) -> Option<Uuid>
    where
        R: Rng + ?Sized,
    {
        match self {
            Self::First => candidates.oldest(),
            Self::Random | Self::Rendezvous if candidates.is_empty() => None,
            Self::Random | Self::Rendezvous => candidates.at(rng.random_range(0..candidates.len())),
        }
    }

    /// [`choose`](Self::choose), passing over the tasks in `taken`: the ones a worker's pool
    /// siblings are claiming right now (`worker/pool.rs`). A sibling's claim on such a task
    /// would beat this one or lose to it — a round trip lost inside one process, where the
    /// answer was known. Looks at no more than `taken.len() + 1` candidates: `First` takes the
    /// oldest candidate not taken; `Random` draws a position and takes the first candidate not
    /// taken from there on (a taken task's successor is a little likelier than the rest; with a
    /// handful of siblings over a backlog that is noise). `None` if every candidate is taken.
    ///
    /// ```
    /// use booblik_samples::queue::pick::Pick;
    /// use booblik_samples::queue::record::Task;
    /// use booblik_samples::queue::state::{QueueConfig, QueueState};
    /// use uuid::Uuid;
    ///
    /// let ids = [Uuid::from_u128(1), Uuid::from_u128(2)];
    /// let mut state = QueueState::new(QueueConfig::default());
    /// for (offset, &task_id) in ids.iter().enumerate() {
    ///     let task = Task { task_id, payload: vec![], submitted_at_ms: 0 };
    ///     state.apply_task(offset as i64, &task).unwrap();
    /// }
    /// let candidates = state.candidates(0);
    /// let mut rng = rand::rng();
    /// assert_eq!(Pick::First.choose_around(&candidates, &[ids[0]], &mut rng), Some(ids[1]));
    /// assert_eq!(Pick::Random.choose_around(&candidates, &[ids[1]], &mut rng), Some(ids[0]));
    /// assert_eq!(Pick::Random.choose_around(&candidates, &ids, &mut rng), None);
    /// ```
    pub fn choose_around<R>(
        self,
        candidates: &Candidates<'_>,
        taken: &[Uuid],
        rng: &mut R,
    ) -> Option<Uuid>
    where
        R: Rng + ?Sized,
    {
        if taken.is_empty() {
            return self.choose(candidates, rng);
        }
        let looks = taken.len() + 1;
        match self {
            Self::First => candidates
                .clone()
                .oldest_first()
                .take(looks)
                .find(|task_id| !taken.contains(task_id)),
            Self::Random | Self::Rendezvous if candidates.is_empty() => None,
            Self::Random | Self::Rendezvous => {
                let start = rng.random_range(0..candidates.len());
                candidates
                    .window(start, looks)
                    .find(|task_id| !taken.contains(task_id))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::record::{Claim, ClaimsRecord, Task};
    use crate::queue::state::{QueueConfig, QueueState};
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    const LEASE_MS: u64 = 1_000;

    fn id(n: i64) -> Uuid {
        Uuid::from_u128(n.unsigned_abs().into())
    }

    /// Tasks at offsets `0..count`, of which the ones in `claimed` were claimed at time 0.
    fn state(count: i64, claimed: &[i64]) -> QueueState {
        let mut state = QueueState::new(QueueConfig::default());
        for offset in 0..count {
            let task = Task {
                task_id: id(offset),
                payload: vec![],
                submitted_at_ms: 0,
            };
            state.apply_task(offset, &task).expect("increasing offsets");
        }
        for (claims_offset, &task_offset) in (0..).zip(claimed) {
            let claim = ClaimsRecord::Claim(Claim {
                task_id: id(task_offset),
                worker_id: Uuid::from_u128(0xAAAA),
                claimed_at_ms: 0,
                lease_ms: LEASE_MS,
            });
            state
                .apply_claims_record(claims_offset, &claim)
                .expect("increasing offsets");
        }
        state
    }

    #[test]
    fn first_picks_the_oldest_candidate_even_when_its_lease_lapsed() {
        let state = state(5, &[0, 1]);
        let mut rng = StdRng::seed_from_u64(7);
        assert_eq!(state.pick(LEASE_MS - 1, Pick::First, &mut rng), Some(id(2)));
        assert_eq!(state.pick(LEASE_MS, Pick::First, &mut rng), Some(id(0)));
    }

    #[test]
    fn no_candidates_means_no_pick() {
        let mut rng = StdRng::seed_from_u64(7);
        let empty = state(0, &[]);
        assert_eq!(empty.pick(0, Pick::First, &mut rng), None);
        assert_eq!(empty.pick(0, Pick::Random, &mut rng), None);
        let all_leased = state(2, &[0, 1]);
        assert_eq!(all_leased.pick(0, Pick::First, &mut rng), None);
        assert_eq!(all_leased.pick(0, Pick::Random, &mut rng), None);
    }

    #[test]
    fn random_picks_free_and_lapsed_candidates_equally_often_and_nothing_else() {
        const DRAWS: usize = 40_000;
        // Offsets 0..4 free; 4..8 leased until LEASE_MS, lapsed at it; 8 leased later, live.
        let mut state = state(8, &[4, 5, 6, 7]);
        let late = ClaimsRecord::Claim(Claim {
            task_id: id(8),
            worker_id: Uuid::from_u128(0xAAAA),
            claimed_at_ms: LEASE_MS,
            lease_ms: LEASE_MS,
        });
        let task = Task {
            task_id: id(8),
            payload: vec![],
            submitted_at_ms: 0,
        };
        state.apply_task(8, &task).expect("increasing offsets");
        state
            .apply_claims_record(4, &late)
            .expect("increasing offsets");

        let mut rng = StdRng::seed_from_u64(7);
        let mut hits = std::collections::HashMap::new();
        for _ in 0..DRAWS {
            let picked = state
                .pick(LEASE_MS, Pick::Random, &mut rng)
                .expect("there are candidates");
            *hits.entry(picked).or_insert(0_usize) += 1;
        }
        let candidates: Vec<Uuid> = (0..8).map(id).collect();
        let mut seen: Vec<Uuid> = hits.keys().copied().collect();
        seen.sort();
        assert_eq!(seen, candidates);
        // 5000 expected each; a pick biased between the free and the lapsed part would be off by
        // far more than this band (and the seed is fixed, so the test is not flaky).
        for (task_id, count) in hits {
            assert!((4_500..=5_500).contains(&count), "{task_id}: {count}");
        }
    }
}
