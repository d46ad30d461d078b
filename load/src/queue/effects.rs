//! The effect sink of a run: where every worker commits the external effect of a task, and the
//! tally of what it took.
//!
//! Booblik's workers commit through the sample's fencing [`ResultSink`]: the holder fences the
//! task with its token when its work starts, and a commit under an older token is refused. The
//! peers' workers commit to the same tally without fencing — Redis Streams and a `SKIP LOCKED`
//! table hand out no token a receiver could check — so a displaced holder's late effect lands.
//! Either way the tally counts the effects taken per task: one beyond the first is a duplicate
//! effect.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use booblik_samples::queue::worker::ResultSink;
use uuid::Uuid;

#[derive(Debug, Default)]
struct Tally {
    taken_per_task: HashMap<Uuid, u64>,
}

/// A shared handle on one run's sink. Clones share it.
#[derive(Debug, Clone)]
pub struct Effects {
    fencing: Option<ResultSink>,
    tally: Arc<Mutex<Tally>>,
}

/// What the sink took over a run.
#[derive(Debug, Clone, Copy, Default)]
pub struct EffectCounts {
    /// Effects taken.
    pub committed: u64,
    /// Effects taken for a task that already had one.
    pub duplicates: u64,
    /// Commits and fences the fencing sink refused.
    pub refused: u64,
}

impl Effects {
    /// A fencing sink (booblik).
    pub fn fencing() -> Self {
        Self {
            fencing: Some(ResultSink::new()),
            tally: Arc::default(),
        }
    }

    /// A sink without fencing (peers).
    pub fn unfenced() -> Self {
        Self {
            fencing: None,
            tally: Arc::default(),
        }
    }

    /// Called when work under `token` starts: from now on older tokens are refused.
    pub fn fence(&self, task_id: Uuid, token: i64) {
        if let Some(sink) = &self.fencing {
            // A refused fence (a newer token was already seen) is counted by the sink itself.
            let _ = sink.fence(task_id, token);
        }
    }

    /// Commits the effect of `task_id` under `token`; returns whether the sink took it.
    pub fn commit(&self, task_id: Uuid, token: i64, effect: Vec<u8>) -> bool {
        if let Some(sink) = &self.fencing
            && sink.commit(task_id, token, effect).is_err()
        {
            return false;
        }
        let mut tally = self.tally.lock().expect("effects lock");
        *tally.taken_per_task.entry(task_id).or_insert(0) += 1;
        true
    }

    /// What the sink took so far.
    pub fn counts(&self) -> EffectCounts {
        let tally = self.tally.lock().expect("effects lock");
        EffectCounts {
            committed: tally.taken_per_task.values().sum(),
            duplicates: tally
                .taken_per_task
                .values()
                .map(|n| n.saturating_sub(1))
                .sum(),
            refused: self.fencing.as_ref().map_or(0, ResultSink::refused),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fencing_sink_refuses_a_late_commit_and_counts_no_duplicate() {
        let effects = Effects::fencing();
        let task = Uuid::from_u128(1);
        effects.fence(task, 7);
        assert!(!effects.commit(task, 3, b"late".to_vec()));
        assert!(effects.commit(task, 7, b"new".to_vec()));
        let counts = effects.counts();
        assert_eq!(
            (counts.committed, counts.duplicates, counts.refused),
            (1, 0, 1)
        );
    }

    #[test]
    fn the_unfenced_sink_takes_a_late_commit_as_a_duplicate() {
        let effects = Effects::unfenced();
        let task = Uuid::from_u128(1);
        effects.fence(task, 7);
        assert!(effects.commit(task, 7, b"new".to_vec()));
        assert!(effects.commit(task, 3, b"late".to_vec()));
        let counts = effects.counts();
        assert_eq!(
            (counts.committed, counts.duplicates, counts.refused),
            (2, 1, 0)
        );
    }
}
