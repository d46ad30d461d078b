//! A second, deliberately naive implementation of the verdict rules, used to audit the state
//! machine.
//!
//! It shares no code with [`crate::queue::state`]: it walks one task's records at a time with a
//! handful of local variables and transcribes the rules from `docs/task-queue.md` as literally as
//! possible. If a refactoring of the state machine changes a verdict, the two disagree and the
//! verifier says where.

use uuid::Uuid;

use super::violation::VerdictKind;
use crate::queue::record::ClaimsRecord;

/// The verdict on each of one task's claims records, given in log order.
pub(super) fn expected_verdicts(
    records: &[&ClaimsRecord],
    offsets: &[i64],
    max_expired_leases: u32,
    max_lease_ms: u64,
) -> Vec<VerdictKind> {
    // (token, worker, expires_at_ms) of the current lease.
    let mut holder: Option<(i64, Uuid, u64)> = None;
    // (token, worker) of the accepted done.
    let mut completed_by: Option<(i64, Uuid)> = None;
    let mut dead = false;
    let mut expired_leases = 0_u32;
    let mut verdicts = Vec::with_capacity(records.len());

    for (record, &offset) in records.iter().zip(offsets) {
        let verdict = match record {
            ClaimsRecord::Claim(claim) => {
                if claim.lease_ms > max_lease_ms || dead || completed_by.is_some() {
                    VerdictKind::ClaimLost
                } else {
                    let lease_has_lapsed = match holder {
                        None => true,
                        Some((_, _, expires_at_ms)) => claim.claimed_at_ms >= expires_at_ms,
                    };
                    let supersedes_a_lease = holder.is_some();
                    if !lease_has_lapsed {
                        VerdictKind::ClaimLost
                    } else if supersedes_a_lease && expired_leases + 1 >= max_expired_leases {
                        expired_leases += 1;
                        dead = true;
                        holder = None;
                        VerdictKind::TaskDeadLettered
                    } else {
                        if supersedes_a_lease {
                            expired_leases += 1;
                        }
                        let expires_at_ms = claim.claimed_at_ms.saturating_add(claim.lease_ms);
                        holder = Some((offset, claim.worker_id, expires_at_ms));
                        VerdictKind::ClaimWon
                    }
                }
            }
            ClaimsRecord::Extend(extend) => match holder {
                Some((token, worker, expires_at_ms))
                    if !dead
                        && completed_by.is_none()
                        && token == extend.token
                        && worker == extend.worker_id
                        && extend.extended_at_ms < expires_at_ms
                        && extend.lease_ms <= max_lease_ms =>
                {
                    let renewed_until_ms = extend.extended_at_ms.saturating_add(extend.lease_ms);
                    holder = Some((token, worker, renewed_until_ms));
                    VerdictKind::Extended
                }
                _ => VerdictKind::ExtendVoid,
            },
            // About no task: never grouped under one (the verifier counts heartbeats apart).
            ClaimsRecord::Heartbeat(_) => VerdictKind::Heartbeat,
            ClaimsRecord::Release(release) => match holder {
                Some((token, worker, expires_at_ms))
                    if !dead
                        && completed_by.is_none()
                        && token == release.token
                        && worker == release.worker_id
                        && release.released_at_ms < expires_at_ms =>
                {
                    // Handed back: the next claim wins without superseding (counting) a lease.
                    holder = None;
                    VerdictKind::Released
                }
                _ => VerdictKind::ReleaseVoid,
            },
            ClaimsRecord::Done(done) => {
                let from_holder =
                    |(token, worker): (i64, Uuid)| token == done.token && worker == done.worker_id;
                if dead {
                    VerdictKind::DoneFenced
                } else if let Some(completion) = completed_by {
                    if from_holder(completion) {
                        VerdictKind::DoneRepeated
                    } else {
                        VerdictKind::DoneFenced
                    }
                } else if holder.is_some_and(|(token, worker, _)| from_holder((token, worker))) {
                    completed_by = Some((done.token, done.worker_id));
                    VerdictKind::DoneAccepted
                } else {
                    VerdictKind::DoneFenced
                }
            }
        };
        verdicts.push(verdict);
    }
    verdicts
}
