//! [`ResultSink`]: a tiny in-process sink that accepts an effect only under the current fencing
//! token — what turns at-least-once *execution* into exactly-once *effects*.
//!
//! The claims log fences results written into `done` by itself. An effect that lands anywhere
//! else (a row, a file, a message) is fenced only if the receiver checks the token. This sink
//! shows the two checks such a receiver needs:
//!
//! 1. **the current lease** — the token must be the task's current one in a [`QueueState`] (the
//!    lease of the last winning claim, or the token the task completed under): a holder displaced
//!    by a later winning claim is refused once the sink's view has seen that claim;
//! 2. **never go back** — the sink remembers the highest token it accepted per task and refuses
//!    anything lower, even if its view of the log lags behind: once the newer holder committed,
//!    the older one cannot overwrite it.
//!
//! An accepted effect is a keyed overwrite (one effect per task, replaced by a newer token), so a
//! repeat under the same token is harmless. What no sink can undo: a displaced holder that
//! committed *before* the sink saw the newer claim. Its effect stands until the newer holder's
//! overwrites it — the token turns "two writers at once" into "the older writer loses", not into
//! "only one writer ever acted" (see "Guarantees" in `docs/task-queue.md`).

use std::collections::HashMap;

use uuid::Uuid;

use super::view::StateView;
use crate::queue::state::{QueueState, TaskStatus};

/// An effect the sink holds for a task, and the token it was committed under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// The fencing token of the lease the effect was committed under.
    pub token: i64,
    /// The effect.
    pub effect: Vec<u8>,
}

/// Why the sink refused an effect.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The sink already accepted an effect under a newer token for this task.
    #[error("task {task_id}: token {token} is older than token {highest_token} already accepted")]
    StaleToken {
        /// The task.
        task_id: Uuid,
        /// The token offered.
        token: i64,
        /// The newest token accepted so far.
        highest_token: i64,
    },
    /// The token is not the task's current lease in the state the sink checked against.
    #[error("task {task_id}: token {token} is not the current lease (current: {current:?})")]
    NotCurrent {
        /// The task.
        task_id: Uuid,
        /// The token offered.
        token: i64,
        /// The current token, if the task has one (none if unclaimed, dead-lettered or unknown).
        current: Option<i64>,
    },
}

/// An in-process fencing sink: one effect per task, accepted only under the current token.
#[derive(Debug, Clone, Default)]
pub struct ResultSink {
    effects: HashMap<Uuid, Committed>,
    refused: u64,
}

impl ResultSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// Commits `effect` for `task_id` under `token` if `token` is the task's current lease in
    /// `state` and not older than a token already accepted; replaces the previous effect.
    pub fn commit(
        &mut self,
        state: &QueueState,
        task_id: Uuid,
        token: i64,
        effect: Vec<u8>,
    ) -> Result<(), Refused> {
        let outcome = self.check(state, task_id, token);
        match outcome {
            Ok(()) => {
                self.effects.insert(task_id, Committed { token, effect });
            }
            Err(_) => self.refused += 1,
        }
        outcome
    }

    /// [`commit`](Self::commit) against a worker's live view (e.g. from a work function's
    /// [`Assignment`](super::Assignment)).
    pub fn commit_with_view(
        &mut self,
        view: &StateView,
        task_id: Uuid,
        token: i64,
        effect: Vec<u8>,
    ) -> Result<(), Refused> {
        view.with_state(|state| self.commit(state, task_id, token, effect))
    }

    /// The effect held for `task_id`.
    pub fn effect(&self, task_id: Uuid) -> Option<&Committed> {
        self.effects.get(&task_id)
    }

    /// Tasks with an effect.
    pub fn len(&self) -> usize {
        self.effects.len()
    }

    /// No effect committed yet.
    pub fn is_empty(&self) -> bool {
        self.effects.is_empty()
    }

    /// Effects refused so far: work whose effect did not count.
    pub fn refused(&self) -> u64 {
        self.refused
    }

    fn check(&self, state: &QueueState, task_id: Uuid, token: i64) -> Result<(), Refused> {
        if let Some(committed) = self.effects.get(&task_id)
            && token < committed.token
        {
            return Err(Refused::StaleToken {
                task_id,
                token,
                highest_token: committed.token,
            });
        }
        let current = state.task(task_id).and_then(|task| match &task.status {
            TaskStatus::Leased(lease) | TaskStatus::Done { lease, .. } => Some(lease.token),
            TaskStatus::Unclaimed | TaskStatus::DeadLettered { .. } => None,
        });
        if current == Some(token) {
            Ok(())
        } else {
            Err(Refused::NotCurrent {
                task_id,
                token,
                current,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::record::{Claim, ClaimsRecord, Task};
    use crate::queue::state::QueueConfig;

    const LEASE_MS: u64 = 1_000;
    const T0_MS: u64 = 1_700_000_000_000;

    fn task_id() -> Uuid {
        Uuid::from_u128(0x7A5C)
    }

    fn claim(by: u128, at_ms: u64) -> ClaimsRecord {
        ClaimsRecord::Claim(Claim {
            task_id: task_id(),
            worker_id: Uuid::from_u128(by),
            claimed_at_ms: at_ms,
            lease_ms: LEASE_MS,
        })
    }

    /// A task claimed by worker 1 at offset 0 whose lease then lapsed and went to worker 2 at
    /// offset 1.
    fn taken_over() -> QueueState {
        let mut state = QueueState::new(QueueConfig::default());
        let task = Task {
            task_id: task_id(),
            payload: b"p".to_vec(),
            submitted_at_ms: T0_MS,
        };
        state.apply_task(0, &task).unwrap();
        state.apply_claims_record(0, &claim(1, T0_MS)).unwrap();
        state
            .apply_claims_record(1, &claim(2, T0_MS + LEASE_MS))
            .unwrap();
        state
    }

    #[test]
    fn a_displaced_holder_s_effect_is_refused_and_the_current_holder_s_accepted() {
        let state = taken_over();
        let mut sink = ResultSink::new();
        assert_eq!(
            sink.commit(&state, task_id(), 0, b"old".to_vec()),
            Err(Refused::NotCurrent {
                task_id: task_id(),
                token: 0,
                current: Some(1)
            })
        );
        assert_eq!(sink.commit(&state, task_id(), 1, b"new".to_vec()), Ok(()));
        assert_eq!(
            sink.effect(task_id()),
            Some(&Committed {
                token: 1,
                effect: b"new".to_vec()
            })
        );
        assert_eq!(sink.refused(), 1);
    }

    #[test]
    fn a_sink_whose_view_lags_still_never_goes_back_to_an_older_token() {
        let current = taken_over();
        let mut lagging = QueueState::new(QueueConfig::default());
        lagging.apply_claims_record(0, &claim(1, T0_MS)).unwrap();
        let mut sink = ResultSink::new();
        sink.commit(&current, task_id(), 1, b"new".to_vec())
            .unwrap();
        // Checked against a view that has not seen the takeover, token 0 looks current, but the
        // sink has accepted token 1 already.
        assert_eq!(
            sink.commit(&lagging, task_id(), 0, b"old".to_vec()),
            Err(Refused::StaleToken {
                task_id: task_id(),
                token: 0,
                highest_token: 1
            })
        );
        assert_eq!(sink.effect(task_id()).map(|c| c.token), Some(1));
    }

    #[test]
    fn a_repeat_under_the_same_token_overwrites_harmlessly() {
        let state = taken_over();
        let mut sink = ResultSink::new();
        sink.commit(&state, task_id(), 1, b"first".to_vec())
            .unwrap();
        sink.commit(&state, task_id(), 1, b"again".to_vec())
            .unwrap();
        assert_eq!(sink.len(), 1);
        assert_eq!(
            sink.effect(task_id()).map(|c| c.effect.as_slice()),
            Some(&b"again"[..])
        );
    }

    #[test]
    fn nothing_is_accepted_for_a_task_nobody_holds() {
        let state = QueueState::new(QueueConfig::default());
        let mut sink = ResultSink::new();
        assert_eq!(
            sink.commit(&state, task_id(), 0, b"x".to_vec()),
            Err(Refused::NotCurrent {
                task_id: task_id(),
                token: 0,
                current: None
            })
        );
        assert!(sink.is_empty());
    }
}
