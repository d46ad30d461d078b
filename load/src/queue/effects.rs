//! The effect sink of a run: where every worker commits the external effect of a task, and the
//! tally of what it took.
//!
//! Booblik's workers commit through the sample's fencing [`ResultSink`]: the holder fences the
//! task with its token when its work starts, and a commit under an older token is refused. The
//! peers' workers commit to the same tally without fencing — Redis Streams and a `SKIP LOCKED`
//! table hand out no token a receiver could check — so a displaced holder's late effect lands.
//! Either way the tally keeps, per task, the highest token any holder fenced or committed under.
//!
//! # What counts as a duplicate effect
//!
//! A **duplicate effect** is an effect the sink took from a *displaced* holder: its token is
//! lower than one the tally had already seen for the task, so a newer holder was at work (it had
//! fenced) or had committed when the late effect landed. That is the zombie write fencing exists
//! to stop — the stall chaos produces it on purpose.
//!
//! An effect taken under a token *higher* than every earlier one is not a duplicate: it is the
//! re-execution of a task whose previous holder crashed after committing (the crash chaos kills
//! workers mid-task, some after their commit and before their done). The receiver is a keyed
//! overwrite on every system alike, so the newer holder's effect replaces the older one and the
//! task ends with one effect; it is counted apart as `superseded`, at-least-once execution seen
//! from the receiver. (Counting it as a duplicate made 3 of 6 booblik crash runs of one sweep
//! report one "duplicate" each, for a task the protocol had handed over correctly.)

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use booblik_samples::queue::worker::ResultSink;
use uuid::Uuid;

#[derive(Debug, Default)]
struct Tally {
    tasks: HashMap<Uuid, TaskTally>,
}

#[derive(Debug, Default)]
struct TaskTally {
    /// The highest token fenced or committed under so far.
    highest_token: Option<i64>,
    /// The token of the last effect taken.
    effect_token: Option<i64>,
    /// Effects taken.
    taken: u64,
    /// Effects taken under a token lower than `highest_token` at the time.
    late: u64,
    /// Effects replaced by one taken under a higher token.
    superseded: u64,
}

impl TaskTally {
    fn see(&mut self, token: i64) {
        self.highest_token = Some(self.highest_token.map_or(token, |t| t.max(token)));
    }

    fn take(&mut self, token: i64) {
        if self.highest_token.is_some_and(|highest| token < highest) {
            self.late += 1;
        } else if self.effect_token.is_some_and(|last| token > last) {
            // A higher token than the last effect's replaces it; the same token repeats it.
            self.superseded += 1;
        }
        self.taken += 1;
        self.effect_token = Some(token);
        self.see(token);
    }
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
    /// Effects taken from a displaced holder: under a token lower than one already seen for
    /// the task (see the module docs).
    pub duplicates: u64,
    /// Effects replaced by a newer holder's (re-execution after a crash): not duplicates.
    pub superseded: u64,
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
        let mut tally = self.tally.lock().expect("effects lock");
        tally.tasks.entry(task_id).or_default().see(token);
    }

    /// Commits the effect of `task_id` under `token`; returns whether the sink took it.
    pub fn commit(&self, task_id: Uuid, token: i64, effect: Vec<u8>) -> bool {
        if let Some(sink) = &self.fencing
            && sink.commit(task_id, token, effect).is_err()
        {
            return false;
        }
        let mut tally = self.tally.lock().expect("effects lock");
        tally.tasks.entry(task_id).or_default().take(token);
        true
    }

    /// What the sink took so far.
    pub fn counts(&self) -> EffectCounts {
        let tally = self.tally.lock().expect("effects lock");
        EffectCounts {
            committed: tally.tasks.values().map(|t| t.taken).sum(),
            duplicates: tally.tasks.values().map(|t| t.late).sum(),
            superseded: tally.tasks.values().map(|t| t.superseded).sum(),
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

    #[test]
    fn a_re_execution_after_a_crash_supersedes_the_effect_and_is_no_duplicate() {
        for effects in [Effects::fencing(), Effects::unfenced()] {
            let task = Uuid::from_u128(1);
            // The first holder commits, then dies before its done; the task is claimed again.
            effects.fence(task, 3);
            assert!(effects.commit(task, 3, b"first".to_vec()));
            effects.fence(task, 9);
            assert!(effects.commit(task, 9, b"again".to_vec()));
            let counts = effects.counts();
            assert_eq!(
                (counts.committed, counts.duplicates, counts.superseded),
                (2, 0, 1)
            );
        }
    }

    #[test]
    fn an_unfenced_late_effect_is_a_duplicate_even_after_the_newer_one_landed() {
        let effects = Effects::unfenced();
        let task = Uuid::from_u128(1);
        effects.fence(task, 3);
        effects.fence(task, 9);
        assert!(effects.commit(task, 9, b"new".to_vec()));
        assert!(effects.commit(task, 3, b"late".to_vec()));
        let counts = effects.counts();
        assert_eq!(
            (counts.committed, counts.duplicates, counts.superseded),
            (2, 1, 0)
        );
    }
}
