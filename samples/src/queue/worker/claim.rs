//! The claim round trip: append a claim, wait until the worker's own claims follower has applied
//! it, and read the verdict at the offset the append returned.
//!
//! The offset is how a worker recognises its claim — the record carries no token, because the
//! token *is* that offset. The round trip (append issued → acknowledged and applied) is the claim
//! latency the load experiment measures.

use std::time::{Duration, Instant};

use super::stats::StatsCells;
use super::view::Candidate;
use super::{VERDICT_TIMEOUT_MS, Worker, WorkerEvent, wall_clock_ms};
use crate::queue::record::Claim;
use crate::queue::state::{ClaimLostReason, Event};

/// Whether a claim made it into the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Attempt {
    /// Appended; the verdict is known and acted upon (lost, or the work is over).
    Appended,
    /// The append failed; whether it was written is unknown (if it was and won, the lease lapses
    /// and the task is claimed again).
    NotAppended,
}

/// A lease the worker holds after a claim.
#[derive(Debug, Clone, Copy)]
pub(super) struct Grant {
    pub(super) token: i64,
    /// When to send the first extend.
    pub(super) first_extend_at: Instant,
}

impl Worker {
    /// Claims `candidate`; if the claim wins, works on it until done or the lease is lost.
    pub(super) async fn claim(&self, candidate: Candidate) -> anyhow::Result<Attempt> {
        let task_id = candidate.task_id;
        let worker_id = self.config.worker_id;
        let issued_at = Instant::now();
        let claim = Claim {
            task_id,
            worker_id,
            claimed_at_ms: wall_clock_ms(),
            lease_ms: self.config.lease_ms,
        };
        let offset = match self.appender.append(&claim.into()).await {
            Ok(offset) => offset,
            Err(error) => {
                tracing::warn!(%worker_id, %task_id, %error, "claim append failed; its fate is unknown");
                return Ok(Attempt::NotAppended);
            }
        };
        let acknowledged_at = Instant::now();
        StatsCells::bump(&self.stats.claims);
        self.emit(WorkerEvent::ClaimAppended { task_id, offset });

        let verdict = self
            .view
            .wait_for_own_verdict(offset, Duration::from_millis(VERDICT_TIMEOUT_MS))
            .await?;
        let claim_latency = verdict.applied_at.max(acknowledged_at) - issued_at;
        let grant = match &verdict.event {
            Event::ClaimWon { token, .. } => {
                StatsCells::bump(&self.stats.wins);
                Some(Grant {
                    token: *token,
                    first_extend_at: issued_at + self.config.extend_every(),
                })
            }
            // An earlier claim of ours (one whose acknowledgement was lost) won this task: the
            // lease is ours under that claim's token. Its grant time is unknown, so extend now.
            Event::ClaimLost {
                reason:
                    ClaimLostReason::AlreadyLeased {
                        holder_token,
                        holder_worker_id,
                        ..
                    },
                ..
            } if *holder_worker_id == worker_id => {
                StatsCells::bump(&self.stats.lost_races);
                Some(Grant {
                    token: *holder_token,
                    first_extend_at: Instant::now(),
                })
            }
            Event::ClaimLost { .. } | Event::TaskDeadLettered { .. } => {
                StatsCells::bump(&self.stats.lost_races);
                None
            }
            other => anyhow::bail!(
                "the verdict on claim offset {offset} is not a claim verdict: {other:?}"
            ),
        };
        let won = grant.is_some();
        self.emit(WorkerEvent::VerdictKnown {
            task_id,
            offset,
            won,
            claim_latency,
        });
        tracing::info!(
            %worker_id,
            %task_id,
            offset,
            won,
            claim_latency_us = claim_latency.as_micros() as u64,
            verdict = ?verdict.event,
            "claim verdict"
        );
        if let Some(grant) = grant {
            self.hold_lease(task_id, grant, candidate.payload).await?;
        }
        Ok(Attempt::Appended)
    }
}
