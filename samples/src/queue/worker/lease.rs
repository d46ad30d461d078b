//! Holding a lease: run the work, extend the lease every `extend_every` while it runs, and commit
//! the result with a done under the lease's token.
//!
//! The work and the extends run side by side (`select!`), so a slow extend round trip never
//! pauses the work and a long task never starves the extends. If an extend turns out void the
//! lease is lost — someone else's claim won (`StaleToken`), or the extend came too late
//! (`Expired`) and anyone may claim the task now — and the work is abandoned: a done would be
//! fenced, or would race a new holder. If the work finishes first, an extend still in flight is
//! dropped; its record, if written, is harmless.
//!
//! # The local deadline
//!
//! A void extend is one way to learn the lease is gone; silence is the other. If extends cannot be
//! appended (the broker is unreachable, the appends keep failing), no verdict ever says "void",
//! yet the lease lapses all the same, and someone else may claim the task. So the worker keeps a
//! deadline of its own, by its monotonic clock: `valid_until` = the moment the last *confirmed*
//! grant or renewal was issued + `lease_ms` − a safety margin
//! ([`LEASE_SAFETY_MARGIN_PERCENT`] of the lease, for the writers' clock skew and the time the
//! next holder's claim takes). The record's timestamp is taken after that moment, so the log's
//! lease runs at least that long. When `valid_until` passes without a newer confirmation, the
//! worker drops the work and reports the lease lost — it stops *before* the log would let another
//! worker in, not after. (This cannot help a worker whose whole process is paused; that case is
//! the fencing sink's.)

use std::time::{Duration, Instant};

use uuid::Uuid;

use super::claim::Grant;
use super::stats::StatsCells;
use super::{
    APPEND_RETRY_BACKOFF_MS, Assignment, StateView, VERDICT_TIMEOUT_MS, Worker, WorkerEvent,
    wall_clock_ms,
};
use crate::queue::record::{Done, Extend};
use crate::queue::state::{Event, Rejection};

/// Share of the lease, in percent, that the worker gives up at the end of every lease: its local
/// deadline is `issued_at + lease_ms × (100 − this) / 100` (see "The local deadline").
pub const LEASE_SAFETY_MARGIN_PERCENT: u64 = 10;

/// The worker's local deadline for a lease confirmed as issued at `issued_at` (a grant or a
/// renewal): after it the worker must not act under the lease any more.
pub fn local_lease_deadline(issued_at: Instant, lease_ms: u64) -> Instant {
    issued_at + Duration::from_millis(lease_ms * (100 - LEASE_SAFETY_MARGIN_PERCENT) / 100)
}

/// Attempts at appending a done before giving up (the lease then lapses and the task is run
/// again). Repeating a done is safe: a repeat of an accepted done is a no-op by the rules.
pub const MAX_DONE_ATTEMPTS: u32 = 5;

/// What became of one extend.
enum ExtendOutcome {
    /// The lease now runs `lease_ms` from `issued_at`.
    Renewed { issued_at: Instant },
    /// The lease is gone.
    Void { reason: Rejection },
    /// The append failed; try again soon.
    NotAppended,
}

/// Clears the worker's current task when the work ends, however it ends (including when the
/// worker's future is dropped at shutdown).
struct CurrentTask<'a> {
    worker: &'a Worker,
}

impl<'a> CurrentTask<'a> {
    fn set(worker: &'a Worker, task_id: Uuid, token: i64) -> Self {
        *worker.current.lock().expect("current task lock") = Some((task_id, token));
        Self { worker }
    }
}

impl Drop for CurrentTask<'_> {
    fn drop(&mut self) {
        *self.worker.current.lock().expect("current task lock") = None;
    }
}

impl Worker {
    /// Works on `task_id` under `grant` until the done's verdict is known or the lease is lost.
    pub(super) async fn hold_lease(
        &self,
        task_id: Uuid,
        grant: Grant,
        payload: Vec<u8>,
    ) -> anyhow::Result<()> {
        let worker_id = self.config.worker_id;
        let token = grant.token;
        let _current = CurrentTask::set(self, task_id, token);
        self.emit(WorkerEvent::WorkStarted { task_id, token });
        tracing::info!(%worker_id, %task_id, token, "work started");

        let mut work = (self.work)(Assignment {
            task_id,
            token,
            payload,
            view: StateView::new(std::sync::Arc::clone(&self.view)),
        });
        let extend_every = self.config.extend_every();
        let mut next_extend_at = grant.first_extend_at;
        let mut valid_until = local_lease_deadline(grant.issued_at, self.config.lease_ms);
        let result = loop {
            tokio::select! {
                biased;
                // First: past the local deadline nothing else may happen under this lease.
                () = tokio::time::sleep_until(valid_until.into()) => {
                    self.lease_lost(task_id, token, "no renewal confirmed before the local lease deadline");
                    return Ok(());
                }
                result = &mut work => break result,
                outcome = self.extend_at(next_extend_at, task_id, token) => match outcome? {
                    ExtendOutcome::Renewed { issued_at } => {
                        next_extend_at = issued_at + extend_every;
                        valid_until = local_lease_deadline(issued_at, self.config.lease_ms);
                    }
                    ExtendOutcome::NotAppended => {
                        next_extend_at = Instant::now() + Duration::from_millis(APPEND_RETRY_BACKOFF_MS);
                    }
                    ExtendOutcome::Void { reason } => {
                        self.lease_lost(task_id, token, &format!("extend void: {reason:?}"));
                        return Ok(());
                    }
                },
            }
        };
        self.commit_done(task_id, token, result).await
    }

    /// Waits until `at`, appends an extend, and waits for its verdict.
    async fn extend_at(
        &self,
        at: Instant,
        task_id: Uuid,
        token: i64,
    ) -> anyhow::Result<ExtendOutcome> {
        tokio::time::sleep_until(at.into()).await;
        let issued_at = Instant::now();
        let extend = Extend {
            task_id,
            worker_id: self.config.worker_id,
            token,
            extended_at_ms: wall_clock_ms(),
            lease_ms: self.config.lease_ms,
        };
        let offset = match self.appender.append(&extend.into()).await {
            Ok(offset) => offset,
            Err(error) => {
                tracing::warn!(worker_id = %self.config.worker_id, %task_id, token, %error, "extend append failed");
                return Ok(ExtendOutcome::NotAppended);
            }
        };
        let verdict = self
            .view
            .wait_for_own_verdict(offset, Duration::from_millis(VERDICT_TIMEOUT_MS))
            .await?;
        match verdict.event {
            Event::Extended { expires_at_ms, .. } => {
                StatsCells::bump(&self.stats.extends);
                tracing::debug!(worker_id = %self.config.worker_id, %task_id, token, offset, expires_at_ms, "lease extended");
                Ok(ExtendOutcome::Renewed { issued_at })
            }
            Event::ExtendVoid { reason, .. } => Ok(ExtendOutcome::Void { reason }),
            other => anyhow::bail!(
                "the verdict on extend offset {offset} is not an extend verdict: {other:?}"
            ),
        }
    }

    /// Appends the done (repeating it if the append fails) and reads its verdict.
    async fn commit_done(&self, task_id: Uuid, token: i64, result: Vec<u8>) -> anyhow::Result<()> {
        let worker_id = self.config.worker_id;
        for attempt in 1..=MAX_DONE_ATTEMPTS {
            let done = Done {
                task_id,
                worker_id,
                token,
                done_at_ms: wall_clock_ms(),
                result: result.clone(),
            };
            let offset = match self.appender.append(&done.into()).await {
                Ok(offset) => offset,
                Err(error) => {
                    tracing::warn!(%worker_id, %task_id, token, attempt, %error, "done append failed; repeating it");
                    tokio::time::sleep(Duration::from_millis(APPEND_RETRY_BACKOFF_MS)).await;
                    continue;
                }
            };
            self.emit(WorkerEvent::DoneAppended {
                task_id,
                token,
                offset,
            });
            let verdict = self
                .view
                .wait_for_own_verdict(offset, Duration::from_millis(VERDICT_TIMEOUT_MS))
                .await?;
            match verdict.event {
                Event::DoneAccepted { .. } | Event::DoneRepeated { .. } => {
                    StatsCells::bump(&self.stats.completed);
                    tracing::info!(%worker_id, %task_id, token, offset, "task completed");
                }
                Event::DoneFenced { reason, .. } => {
                    self.lease_lost(task_id, token, &format!("done fenced: {reason:?}"));
                }
                other => anyhow::bail!(
                    "the verdict on done offset {offset} is not a done verdict: {other:?}"
                ),
            }
            return Ok(());
        }
        self.give_up(token);
        tracing::warn!(%worker_id, %task_id, token, "gave up appending the done; the lease will lapse");
        Ok(())
    }

    /// Never adopt `token` again (see `UnacknowledgedClaims`).
    fn give_up(&self, token: i64) {
        self.unacknowledged_claims
            .lock()
            .expect("unacknowledged claims lock")
            .given_up(token);
    }

    fn lease_lost(&self, task_id: Uuid, token: i64, why: &str) {
        self.give_up(token);
        StatsCells::bump(&self.stats.leases_lost);
        self.emit(WorkerEvent::LeaseLost { task_id, token });
        tracing::warn!(worker_id = %self.config.worker_id, %task_id, token, why, "lease lost");
    }
}
