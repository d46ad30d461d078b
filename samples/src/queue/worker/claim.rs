//! The claim round trip: append a claim, wait until the worker's own claims follower has applied
//! it, and read the verdict at the offset the append returned.
//!
//! The offset is how a worker recognises its claim — the record carries no token, because the
//! token *is* that offset. The round trip (append issued → acknowledged and applied) is the claim
//! latency the load experiment measures.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use uuid::Uuid;

use super::stats::StatsCells;
use super::view::Candidate;
use super::{VERDICT_TIMEOUT_MS, Worker, WorkerEvent, wall_clock_ms};
use crate::queue::record::Claim;
use crate::queue::state::{ClaimLostReason, Event};

/// Claim appends that failed remembered at most (their task ids): a failed append may still
/// have been written and won, and only such a claim's lease may be adopted later.
pub const MAX_UNACKNOWLEDGED_CLAIMS: usize = 1_024;

/// Claims of this run whose append failed: their fate is unknown — written and winning, for all
/// the worker knows. The one question asked of them: may a lease held under this worker's id be
/// adopted as this run's own? Also the tokens this run gave up: a lease the worker walked away
/// from (its local deadline passed, its done was fenced or never appended) may still be alive in
/// the log — an extend whose append "failed" may have been written — and its real expiry is
/// unknown, so it is never adopted again; it lapses and the task is claimed anew.
#[derive(Debug, Default)]
pub(super) struct UnacknowledgedClaims {
    /// `(task, when the append was issued)`, oldest first, at most [`MAX_UNACKNOWLEDGED_CLAIMS`].
    claims: VecDeque<(Uuid, Instant)>,
    /// Tokens this run gave up, oldest first, at most [`MAX_UNACKNOWLEDGED_CLAIMS`].
    given_up: VecDeque<i64>,
}

impl UnacknowledgedClaims {
    /// Notes a failed claim append on `task_id` issued at `issued_at` (forgetting the oldest
    /// note beyond [`MAX_UNACKNOWLEDGED_CLAIMS`]).
    pub(super) fn remember(&mut self, task_id: Uuid, issued_at: Instant) {
        if self.claims.len() >= MAX_UNACKNOWLEDGED_CLAIMS {
            self.claims.pop_front();
        }
        self.claims.push_back((task_id, issued_at));
    }

    /// Notes that this run stopped working under `token` without an accepted done.
    pub(super) fn given_up(&mut self, token: i64) {
        if self.given_up.len() >= MAX_UNACKNOWLEDGED_CLAIMS {
            self.given_up.pop_front();
        }
        self.given_up.push_back(token);
    }

    /// If the claim at `holder_token` on `task_id` can be one this run wrote — at or after
    /// `own_from` (the claims position where this run started), on a task whose claim append this
    /// run saw fail — when the earliest such append was issued: the conservative start of its
    /// lease. `None`: the claim is not this run's, and its lease must not be adopted.
    pub(super) fn adoptable(
        &self,
        task_id: Uuid,
        holder_token: i64,
        own_from: i64,
    ) -> Option<Instant> {
        if holder_token < own_from || self.given_up.contains(&holder_token) {
            return None;
        }
        self.claims
            .iter()
            .find(|(task, _)| *task == task_id)
            .map(|(_, issued_at)| *issued_at)
    }
}

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
    /// When the claim that won was issued (no later than its timestamp was taken): the local
    /// lease deadline runs from here.
    pub(super) issued_at: Instant,
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
                self.unacknowledged_claims
                    .lock()
                    .expect("unacknowledged claims lock")
                    .remember(task_id, issued_at);
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
                    issued_at,
                    first_extend_at: issued_at + self.config.extend_every(),
                })
            }
            // An earlier claim under our worker id holds the task. The lease is ours only if
            // *this run* wrote that claim: one whose append failed (its acknowledgement lost)
            // for this very task, at or after this run's start in the claims log. Anything else
            // is another process with the same worker id — adopting its lease would put two
            // workers on one token. Its grant time is unknown, so extend now.
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
                let adoptable = self
                    .unacknowledged_claims
                    .lock()
                    .expect("unacknowledged claims lock")
                    .adoptable(task_id, *holder_token, self.view.own_from());
                if let Some(claim_issued_at) = adoptable {
                    Some(Grant {
                        token: *holder_token,
                        issued_at: claim_issued_at,
                        first_extend_at: Instant::now(),
                    })
                } else {
                    tracing::error!(
                        %worker_id,
                        %task_id,
                        holder_token,
                        own_from = self.view.own_from(),
                        "a claim under this worker id that this run did not write holds the task: \
                         is another process running with the same worker id?"
                    );
                    None
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    const OWN_FROM: i64 = 100;

    #[test]
    fn only_a_claim_this_run_may_have_written_is_adopted() {
        let (mine, other) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let issued_at = Instant::now();
        let mut claims = UnacknowledgedClaims::default();
        claims.remember(mine, issued_at);
        assert_eq!(
            claims.adoptable(mine, OWN_FROM + 5, OWN_FROM),
            Some(issued_at)
        );
        // Written before this run started: an earlier run's, or another process's.
        assert_eq!(claims.adoptable(mine, OWN_FROM - 1, OWN_FROM), None);
        // A task whose claim append never failed in this run: another process's claim.
        assert_eq!(claims.adoptable(other, OWN_FROM + 5, OWN_FROM), None);
    }

    #[test]
    fn a_lease_this_run_gave_up_is_never_adopted_again() {
        let task = Uuid::from_u128(1);
        let mut claims = UnacknowledgedClaims::default();
        claims.remember(task, Instant::now());
        assert!(claims.adoptable(task, OWN_FROM + 5, OWN_FROM).is_some());
        claims.given_up(OWN_FROM + 5);
        assert_eq!(claims.adoptable(task, OWN_FROM + 5, OWN_FROM), None);
        // Another token on the same task (a later claim of this run) still can be.
        assert!(claims.adoptable(task, OWN_FROM + 9, OWN_FROM).is_some());
    }

    #[test]
    fn the_earliest_failed_append_bounds_the_adopted_lease() {
        let task = Uuid::from_u128(1);
        let first = Instant::now();
        let later = first + Duration::from_millis(50);
        let mut claims = UnacknowledgedClaims::default();
        claims.remember(task, first);
        claims.remember(task, later);
        assert_eq!(claims.adoptable(task, OWN_FROM, OWN_FROM), Some(first));
    }

    #[test]
    fn the_oldest_note_is_forgotten_beyond_the_cap() {
        let now = Instant::now();
        let mut claims = UnacknowledgedClaims::default();
        for n in 0..=MAX_UNACKNOWLEDGED_CLAIMS {
            claims.remember(Uuid::from_u128(n as u128), now);
        }
        assert_eq!(
            claims.adoptable(Uuid::from_u128(0), OWN_FROM, OWN_FROM),
            None
        );
        assert!(
            claims
                .adoptable(Uuid::from_u128(1), OWN_FROM, OWN_FROM)
                .is_some()
        );
    }
}
