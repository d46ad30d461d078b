//! [`ResultSink`]: the receiver of effects, which accepts an effect for a task only under a
//! fencing token at least as high as any it has seen for that task — what turns at-least-once
//! *execution* into exactly-once *effects*.
//!
//! # Why the receiver checks, not the worker
//!
//! The case fencing exists for is a holder that was paused (a GC pause, a stopped VM, a laptop
//! lid) past its lease while another worker's claim won the task. When it wakes up, everything in
//! its process was paused with it, including its followers: its own view of the claims log still
//! says its token is current. A check against that view before the write is check-then-act on a
//! stale view, and passes. Only the receiver of the effect sees both holders' writes, so only the
//! receiver can order them: tokens grow with every winning claim (the token is the claim's offset
//! in the claims log), and the receiver refuses any token lower than the highest it has seen for
//! the task. That works only if every holder of the task writes to the **same** receiver — one
//! sink, shared (this type is a cheap clonable handle on one shared state).
//!
//! An accepted effect is a keyed overwrite (one effect per task, replaced under a newer token), so
//! a repeat under the same token is harmless. A holder can also [`fence`](ResultSink::fence) the
//! task when its work starts, so an older holder is refused from then on, not only once the newer
//! one has committed. What no receiver can undo: a displaced holder's effect that reached it
//! *before* any newer token did. It stands until the newer holder's effect overwrites it — the
//! token turns "two writers at once" into "the older writer loses", not into "only one writer ever
//! acted" (see "Guarantees" in `docs/task-queue.md`).
//!
//! This sink lives in memory; a real receiver keeps the token next to the effect (a column in
//! the row, a field in the document) and does the comparison in the same transaction as the write.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::FutureExt;
use uuid::Uuid;

use super::work::{Assignment, WorkFn};

/// Tasks the sink keeps an entry for at most; beyond this it refuses new tasks
/// ([`Refused::Full`]) rather than grow without limit.
pub const MAX_SINK_TASKS: usize = 1_000_000;

/// An effect the sink holds for a task, and the token it was committed under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// The fencing token of the lease the effect was committed under.
    pub token: i64,
    /// The effect.
    pub effect: Vec<u8>,
}

/// Why the sink refused an effect (or a fence).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The sink has already seen a newer token for this task: the holder was displaced.
    #[error("task {task_id}: token {token} is older than token {highest_token} already seen")]
    StaleToken {
        /// The task.
        task_id: Uuid,
        /// The token offered.
        token: i64,
        /// The newest token seen so far.
        highest_token: i64,
    },
    /// The sink holds [`MAX_SINK_TASKS`] tasks already.
    #[error("task {task_id}: the sink is full ({limit} tasks)")]
    Full {
        /// The task.
        task_id: Uuid,
        /// The limit.
        limit: usize,
    },
}

/// What the sink knows about one task.
#[derive(Debug, Clone)]
struct Fenced {
    highest_token: i64,
    effect: Option<Committed>,
}

#[derive(Debug, Default)]
struct SinkInner {
    tasks: HashMap<Uuid, Fenced>,
    refused: u64,
}

/// A fencing sink: one effect per task, accepted only under a token not lower than any seen for
/// that task. Clones share one sink: give every worker a clone of the same one.
#[derive(Debug, Clone, Default)]
pub struct ResultSink {
    inner: Arc<Mutex<SinkInner>>,
}

impl ResultSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, SinkInner> {
        // Every update below is a single insert: a panic cannot leave it half done.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Commits `effect` for `task_id` under `token` unless the sink has seen a higher token for
    /// the task; replaces the previous effect and raises the task's highest token to `token`.
    pub fn commit(&self, task_id: Uuid, token: i64, effect: Vec<u8>) -> Result<(), Refused> {
        self.admit(task_id, token, Some(effect))
    }

    /// Records `token` for `task_id` without an effect, e.g. when the work starts: from now on
    /// every lower token is refused, before this holder has committed anything.
    pub fn fence(&self, task_id: Uuid, token: i64) -> Result<(), Refused> {
        self.admit(task_id, token, None)
    }

    fn admit(&self, task_id: Uuid, token: i64, effect: Option<Vec<u8>>) -> Result<(), Refused> {
        let mut inner = self.lock();
        let inner = &mut *inner;
        let full = inner.tasks.len() >= MAX_SINK_TASKS;
        let outcome = match inner.tasks.get_mut(&task_id) {
            Some(fenced) if token < fenced.highest_token => Err(Refused::StaleToken {
                task_id,
                token,
                highest_token: fenced.highest_token,
            }),
            Some(fenced) => {
                fenced.highest_token = token;
                if let Some(effect) = effect {
                    fenced.effect = Some(Committed { token, effect });
                }
                Ok(())
            }
            None if full => Err(Refused::Full {
                task_id,
                limit: MAX_SINK_TASKS,
            }),
            None => {
                let fenced = Fenced {
                    highest_token: token,
                    effect: effect.map(|effect| Committed { token, effect }),
                };
                inner.tasks.insert(task_id, fenced);
                Ok(())
            }
        };
        if outcome.is_err() {
            inner.refused += 1;
        }
        outcome
    }

    /// The effect held for `task_id`.
    pub fn effect(&self, task_id: Uuid) -> Option<Committed> {
        self.lock().tasks.get(&task_id)?.effect.clone()
    }

    /// The highest token seen for `task_id` (committed or fenced).
    pub fn highest_token(&self, task_id: Uuid) -> Option<i64> {
        self.lock()
            .tasks
            .get(&task_id)
            .map(|fenced| fenced.highest_token)
    }

    /// Tasks with an effect.
    pub fn len(&self) -> usize {
        self.lock()
            .tasks
            .values()
            .filter(|fenced| fenced.effect.is_some())
            .count()
    }

    /// No effect committed yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Commits and fences refused so far: work whose effect did not count.
    pub fn refused(&self) -> u64 {
        self.lock().refused
    }

    /// Wraps `work` into the pattern every holder should follow: [`fence`](Self::fence) the task
    /// with the lease's token when the work starts — so an older holder that is still running
    /// (paused past its lease, and unaware) is refused from now on — then run `work`, then
    /// [`commit`](Self::commit) its result as the task's effect under the same token. The result
    /// is returned either way: the worker's done meets the same fencing in the claims log.
    pub fn fencing(&self, work: WorkFn) -> WorkFn {
        let sink = self.clone();
        Arc::new(move |assignment: Assignment| {
            let (sink, work) = (sink.clone(), Arc::clone(&work));
            async move {
                let (task_id, token) = (assignment.task_id, assignment.token);
                if let Err(refused) = sink.fence(task_id, token) {
                    tracing::warn!(%refused, "the sink refused the fence: a newer holder got there first");
                }
                let result = work(assignment).await;
                // A refusal means a newer holder has reached the sink: this work did not count.
                if let Err(refused) = sink.commit(task_id, token, result.clone()) {
                    tracing::warn!(%refused, "the sink refused a late effect");
                }
                result
            }
            .boxed()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task_id() -> Uuid {
        Uuid::from_u128(0x7A5C)
    }

    #[test]
    fn an_older_token_is_refused_once_a_newer_one_committed() {
        let sink = ResultSink::new();
        sink.commit(task_id(), 1, b"new".to_vec()).unwrap();
        assert_eq!(
            sink.commit(task_id(), 0, b"old".to_vec()),
            Err(Refused::StaleToken {
                task_id: task_id(),
                token: 0,
                highest_token: 1
            })
        );
        assert_eq!(
            sink.effect(task_id()),
            Some(Committed {
                token: 1,
                effect: b"new".to_vec()
            })
        );
        assert_eq!(sink.refused(), 1);
    }

    #[test]
    fn a_fence_refuses_an_older_token_before_the_newer_holder_commits() {
        let sink = ResultSink::new();
        sink.fence(task_id(), 5).unwrap();
        assert!(matches!(
            sink.commit(task_id(), 3, b"old".to_vec()),
            Err(Refused::StaleToken { .. })
        ));
        assert!(sink.is_empty());
        sink.commit(task_id(), 5, b"new".to_vec()).unwrap();
        assert_eq!(sink.effect(task_id()).map(|c| c.token), Some(5));
    }

    #[test]
    fn a_newer_token_overwrites_an_older_effect() {
        let sink = ResultSink::new();
        sink.commit(task_id(), 0, b"old".to_vec()).unwrap();
        sink.commit(task_id(), 1, b"new".to_vec()).unwrap();
        assert_eq!(sink.len(), 1);
        assert_eq!(sink.effect(task_id()).map(|c| c.token), Some(1));
    }

    #[test]
    fn a_repeat_under_the_same_token_overwrites_harmlessly() {
        let sink = ResultSink::new();
        sink.commit(task_id(), 1, b"first".to_vec()).unwrap();
        sink.commit(task_id(), 1, b"again".to_vec()).unwrap();
        assert_eq!(sink.len(), 1);
        assert_eq!(
            sink.effect(task_id()).map(|c| c.effect),
            Some(b"again".to_vec())
        );
        assert_eq!(sink.refused(), 0);
    }

    #[test]
    fn clones_share_one_sink() {
        let sink = ResultSink::new();
        let other_worker_s_handle = sink.clone();
        other_worker_s_handle
            .commit(task_id(), 2, b"x".to_vec())
            .unwrap();
        assert_eq!(sink.highest_token(task_id()), Some(2));
    }
}
