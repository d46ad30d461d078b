//! Which claimable task a worker goes for.
//!
//! Every worker sees the same claimable set. If they all pick the *first* candidate they all
//! claim the same task, and all but one claim lose the race: wasted round trips that grow with
//! the number of workers. Picking uniformly at random among the candidates spreads the workers
//! over the backlog, so collisions become rare while the backlog is much larger than the number
//! of workers. `First` stays available because the load experiment measures the difference.

use rand::Rng;
use rand::seq::IteratorRandom;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A strategy for choosing one task among the claimable ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Pick {
    /// The first candidate (with [`QueueState::claimable`](crate::queue::state::QueueState::claimable):
    /// the oldest submitted). Deterministic; collides when workers share a view.
    First,
    /// A uniformly random candidate (one pass, no allocation).
    Random,
}

impl Pick {
    /// Chooses one of `candidates`, or `None` if there are none. `rng` is only used by
    /// [`Pick::Random`].
    ///
    /// ```
    /// use booblik_samples::queue::pick::Pick;
    /// use uuid::Uuid;
    ///
    /// let ids = [Uuid::from_u128(1), Uuid::from_u128(2)];
    /// let mut rng = rand::rng();
    /// assert_eq!(Pick::First.choose(ids, &mut rng), Some(ids[0]));
    /// assert!(Pick::Random.choose(ids, &mut rng).is_some_and(|id| ids.contains(&id)));
    /// ```
    pub fn choose<I, R>(self, candidates: I, rng: &mut R) -> Option<Uuid>
    where
        I: IntoIterator<Item = Uuid>,
        R: Rng + ?Sized,
    {
        let mut candidates = candidates.into_iter();
        match self {
            Self::First => candidates.next(),
            Self::Random => candidates.choose(rng),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn ids(count: u128) -> Vec<Uuid> {
        (0..count).map(Uuid::from_u128).collect()
    }

    #[test]
    fn first_picks_the_first_candidate() {
        let mut rng = StdRng::seed_from_u64(7);
        assert_eq!(
            Pick::First.choose(ids(5), &mut rng),
            Some(Uuid::from_u128(0))
        );
    }

    #[test]
    fn no_candidates_means_no_pick() {
        let mut rng = StdRng::seed_from_u64(7);
        assert_eq!(Pick::First.choose(ids(0), &mut rng), None);
        assert_eq!(Pick::Random.choose(ids(0), &mut rng), None);
    }

    #[test]
    fn random_reaches_every_candidate_and_only_candidates() {
        const DRAWS: usize = 2_000;
        let candidates = ids(8);
        let mut rng = StdRng::seed_from_u64(7);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..DRAWS {
            let picked = Pick::Random
                .choose(candidates.iter().copied(), &mut rng)
                .expect("there are candidates");
            assert!(candidates.contains(&picked));
            seen.insert(picked);
        }
        assert_eq!(seen.len(), candidates.len());
    }
}
