//! [`Freeze`]: makes one worker stop dead for a while, the way a paused process stops — a GC
//! pause, a stopped VM, a laptop lid — to show what fencing is for.
//!
//! The freeze blocks the worker's OS thread (`std::thread::sleep` inside the work function), so
//! nothing of that worker runs meanwhile: not its work, not its extends, not its followers, not
//! the timer of its local lease deadline. That is the one case the local deadline cannot catch
//! (the worker does not know time has passed) and the fencing sink exists for: when the thread
//! wakes, the work commits its effect under a token that a newer holder has since fenced, and the
//! sink refuses it. For the freeze to stop the *whole* worker, run the worker on a thread of its
//! own ([`spawn_on_own_thread`](super::spawn_on_own_thread)): on a shared multi-thread runtime
//! its followers would carry on on the other threads, and on a shared current-thread runtime
//! every other worker would freeze with it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use uuid::Uuid;

use super::work::{Assignment, WorkFn};

/// The longest freeze [`Freeze::once`] accepts: one minute.
pub const MAX_FREEZE_MS: u64 = 60_000;

/// One freeze, shared by the work functions it wraps: the first assignment any of them finishes
/// blocks its thread for the freeze's duration; every other assignment runs untouched.
#[derive(Debug)]
pub struct Freeze {
    duration: Duration,
    armed: AtomicBool,
    /// True while a thread is blocked in the freeze.
    blocking: AtomicBool,
    frozen: Mutex<Option<Frozen>>,
}

/// The assignment a [`Freeze`] stopped, and whose work function it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frozen {
    /// The label given to [`Freeze::wrap`] (e.g. `"worker 1"`).
    pub who: String,
    /// The task it held.
    pub task_id: Uuid,
    /// The lease's token.
    pub token: i64,
}

impl Freeze {
    /// A freeze of `freeze_ms`, at most [`MAX_FREEZE_MS`], to happen once.
    pub fn once(freeze_ms: u64) -> anyhow::Result<Arc<Self>> {
        anyhow::ensure!(
            freeze_ms <= MAX_FREEZE_MS,
            "a freeze of {freeze_ms} ms is longer than {MAX_FREEZE_MS} ms"
        );
        Ok(Arc::new(Self {
            duration: Duration::from_millis(freeze_ms),
            armed: AtomicBool::new(true),
            blocking: AtomicBool::new(false),
            frozen: Mutex::new(None),
        }))
    }

    /// Wraps `work`: once the work has produced its result and before it is returned (that is,
    /// before the effect is committed, if `work` sits inside
    /// [`ResultSink::fencing`](super::ResultSink::fencing)), the first assignment through this
    /// freeze blocks the thread.
    pub fn wrap(self: &Arc<Self>, who: impl Into<String>, work: WorkFn) -> WorkFn {
        let (freeze, who) = (Arc::clone(self), who.into());
        Arc::new(move |assignment: Assignment| {
            let (freeze, work, who) = (Arc::clone(&freeze), Arc::clone(&work), who.clone());
            async move {
                let (task_id, token) = (assignment.task_id, assignment.token);
                let result = work(assignment).await;
                if freeze.armed.swap(false, Ordering::SeqCst) {
                    *freeze.frozen.lock().expect("freeze lock") = Some(Frozen {
                        who,
                        task_id,
                        token,
                    });
                    tracing::warn!(%task_id, token, freeze_ms = freeze.duration.as_millis() as u64, "freezing this worker's thread");
                    // Blocking on purpose: the point is that nothing on this thread runs.
                    freeze.blocking.store(true, Ordering::SeqCst);
                    std::thread::sleep(freeze.duration);
                    freeze.blocking.store(false, Ordering::SeqCst);
                }
                result
            }
            .boxed()
        })
    }

    /// How long the freeze lasts.
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// Whether a thread is blocked in the freeze right now.
    pub fn is_blocking(&self) -> bool {
        self.blocking.load(Ordering::SeqCst)
    }

    /// The assignment that froze, once one has.
    pub fn frozen(&self) -> Option<Frozen> {
        self.frozen.lock().expect("freeze lock").clone()
    }
}
