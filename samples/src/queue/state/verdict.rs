//! The verdict rules, in one place: how one claims record changes one task.
//!
//! Everything here is a function of the task's state (itself derived from earlier records of the
//! claims log) and of the fields of the record. No clock is read and the tasks log is not
//! consulted, so every reader that has applied the same prefix of the claims log reaches the
//! same verdict.
//!
//! [`apply`] takes one claims record to the rule for its kind; the rest of the file is the rules.

use std::collections::HashMap;

use uuid::Uuid;

use super::claimable::ClaimableIndex;
use super::config::QueueConfig;
use super::event::{ClaimLostReason, Event, Rejection};
use super::task_state::{Lease, TaskState, TaskStatus};
use crate::queue::record::{Claim, ClaimsRecord, Done, Extend, Release};

/// Applies one claims record at `offset` to its task and returns the verdict: the one entry
/// point of the rules below ([`QueueState::apply_claims_record`](super::QueueState::apply_claims_record)
/// checks the offset, then calls this).
pub(super) fn apply(
    tasks: &mut HashMap<Uuid, TaskState>,
    index: &mut ClaimableIndex,
    config: QueueConfig,
    offset: i64,
    record: &ClaimsRecord,
) -> Event {
    let Some(task_id) = record.task_id() else {
        unreachable!("the state applies heartbeats itself: they name no task")
    };
    let event = match record {
        // A claim may name a task whose record this reader has not read yet (see "Tasks the
        // claims reader has not seen yet" in `state`): it is judged all the same.
        ClaimsRecord::Claim(claim) => {
            let task = tasks
                .entry(task_id)
                .or_insert_with(|| TaskState::new(task_id));
            judge_claim(task, offset, claim, config)
        }
        // No state means nothing was ever claimed for the task: no token can be current.
        ClaimsRecord::Extend(extend) => match tasks.get_mut(&task_id) {
            Some(task) => judge_extend(task, extend, config),
            None => {
                return Event::ExtendVoid {
                    task_id,
                    token: extend.token,
                    reason: Rejection::NeverClaimed,
                };
            }
        },
        ClaimsRecord::Release(release) => match tasks.get_mut(&task_id) {
            Some(task) => judge_release(task, release),
            None => {
                return Event::ReleaseVoid {
                    task_id,
                    token: release.token,
                    reason: Rejection::NeverClaimed,
                };
            }
        },
        ClaimsRecord::Done(done) => match tasks.get_mut(&task_id) {
            Some(task) => judge_done(task, offset, done),
            None => {
                return Event::DoneFenced {
                    task_id,
                    token: done.token,
                    reason: Rejection::NeverClaimed,
                };
            }
        },
        ClaimsRecord::Heartbeat(_) => unreachable!("a heartbeat has no task_id"),
    };
    // The claimable index follows the verdict: an optimisation for picking, skip it on a first
    // read (`claimable/`).
    if let Some(task) = tasks.get(&task_id) {
        index.update(task);
    }
    event
}

/// Judges a claim at `offset`.
///
/// A claim asking for more than `max_lease_ms` is void first, whatever the task's state: it
/// neither wins nor counts an expiry.
///
/// Wins if the task is neither done nor dead-lettered and either nobody ever won it or the
/// current lease had expired at the claim's own `claimed_at_ms` (`claimed_at_ms >=
/// expires_at_ms`). A claim that finds an expired lease counts that expiry; if this makes
/// `max_expired_leases` expiries, the task is dead-lettered instead of being granted again.
pub(super) fn judge_claim(
    task: &mut TaskState,
    offset: i64,
    claim: &Claim,
    config: QueueConfig,
) -> Event {
    let task_id = task.task_id;
    if claim.lease_ms > config.max_lease_ms {
        return Event::ClaimLost {
            task_id,
            reason: ClaimLostReason::LeaseTooLong {
                lease_ms: claim.lease_ms,
                max_lease_ms: config.max_lease_ms,
            },
        };
    }
    match &task.status {
        TaskStatus::DeadLettered { .. } => Event::ClaimLost {
            task_id,
            reason: ClaimLostReason::DeadLettered,
        },
        TaskStatus::Done { lease, .. } => Event::ClaimLost {
            task_id,
            reason: ClaimLostReason::Done { token: lease.token },
        },
        TaskStatus::Leased(lease) if lease.is_live_at(claim.claimed_at_ms) => Event::ClaimLost {
            task_id,
            reason: ClaimLostReason::AlreadyLeased {
                holder_token: lease.token,
                holder_worker_id: lease.worker_id,
                expires_at_ms: lease.expires_at_ms,
            },
        },
        TaskStatus::Leased(lease) => {
            task.expired_leases += 1;
            if task.expired_leases >= config.max_expired_leases.get() {
                task.status = TaskStatus::DeadLettered {
                    offset,
                    last_lease: lease.clone(),
                };
                Event::TaskDeadLettered {
                    task_id,
                    expired_leases: task.expired_leases,
                }
            } else {
                grant(task, offset, claim, true)
            }
        }
        TaskStatus::Unclaimed => grant(task, offset, claim, false),
    }
}

fn grant(task: &mut TaskState, offset: i64, claim: &Claim, after_expiry: bool) -> Event {
    let lease = Lease {
        token: offset,
        worker_id: claim.worker_id,
        claimed_at_ms: claim.claimed_at_ms,
        // Saturating: a forged lease length must not panic the reader; u64::MAX means "forever".
        expires_at_ms: claim.claimed_at_ms.saturating_add(claim.lease_ms),
        extends: 0,
    };
    task.wins += 1;
    let event = Event::ClaimWon {
        task_id: task.task_id,
        worker_id: lease.worker_id,
        token: lease.token,
        expires_at_ms: lease.expires_at_ms,
        attempt: task.wins,
        after_expiry,
    };
    task.status = TaskStatus::Leased(lease);
    event
}

/// Judges an extend: it renews the lease (new expiry `extended_at_ms + lease_ms`) only if it
/// carries the current token, comes from the holder, and was written before the lease expired
/// (`extended_at_ms < expires_at_ms`), asking for at most `max_lease_ms`. Otherwise it is void.
pub(super) fn judge_extend(task: &mut TaskState, extend: &Extend, config: QueueConfig) -> Event {
    let task_id = task.task_id;
    let lease = match current_lease(task, extend.token, extend.worker_id) {
        Ok(lease) => lease,
        Err(reason) => {
            return Event::ExtendVoid {
                task_id,
                token: extend.token,
                reason,
            };
        }
    };
    if !lease.is_live_at(extend.extended_at_ms) {
        return Event::ExtendVoid {
            task_id,
            token: extend.token,
            reason: Rejection::Expired {
                expires_at_ms: lease.expires_at_ms,
            },
        };
    }
    if extend.lease_ms > config.max_lease_ms {
        return Event::ExtendVoid {
            task_id,
            token: extend.token,
            reason: Rejection::LeaseTooLong {
                lease_ms: extend.lease_ms,
                max_lease_ms: config.max_lease_ms,
            },
        };
    }
    lease.expires_at_ms = extend.extended_at_ms.saturating_add(extend.lease_ms);
    lease.extends += 1;
    Event::Extended {
        task_id,
        token: lease.token,
        expires_at_ms: lease.expires_at_ms,
    }
}

/// Judges a release: it frees the task (back to [`TaskStatus::Unclaimed`], counting no expiry)
/// only if it carries the current token, comes from the holder, and was written before the lease
/// expired (`released_at_ms < expires_at_ms`) — the same conditions as an extend. A lease that
/// lapsed first counts as expired when the task is claimed again: a holder that let it lapse did
/// not stop cleanly, whatever it writes afterwards. Otherwise void.
pub(super) fn judge_release(task: &mut TaskState, release: &Release) -> Event {
    let task_id = task.task_id;
    let lease = match current_lease(task, release.token, release.worker_id) {
        Ok(lease) => lease,
        Err(reason) => {
            return Event::ReleaseVoid {
                task_id,
                token: release.token,
                reason,
            };
        }
    };
    if !lease.is_live_at(release.released_at_ms) {
        return Event::ReleaseVoid {
            task_id,
            token: release.token,
            reason: Rejection::Expired {
                expires_at_ms: lease.expires_at_ms,
            },
        };
    }
    task.status = TaskStatus::Unclaimed;
    task.releases += 1;
    Event::Released {
        task_id,
        token: release.token,
    }
}

/// Judges a done: accepted if it carries the current token and comes from the holder, **at any
/// time** — even after the lease's expiry — as long as no later claim has superseded the lease.
///
/// Why not also require `done_at_ms` before the expiry: the token already guarantees that nobody
/// else was granted the task in between (any later winner would have changed the token), so the
/// extra check adds no safety; it would only rely on the holder's clock, and it would throw away
/// finished work and force a re-execution that nothing required.
pub(super) fn judge_done(task: &mut TaskState, offset: i64, done: &Done) -> Event {
    let task_id = task.task_id;
    if let TaskStatus::Done { lease, .. } = &task.status
        && lease.token == done.token
        && lease.worker_id == done.worker_id
    {
        return Event::DoneRepeated {
            task_id,
            token: done.token,
        };
    }
    let lease = match current_lease(task, done.token, done.worker_id) {
        Ok(lease) => lease.clone(),
        Err(reason) => {
            return Event::DoneFenced {
                task_id,
                token: done.token,
                reason,
            };
        }
    };
    task.status = TaskStatus::Done {
        lease,
        done_offset: offset,
        done_at_ms: done.done_at_ms,
    };
    Event::DoneAccepted {
        task_id,
        token: done.token,
    }
}

/// The current lease if `token` and `worker_id` name it, else why not (in [`Rejection`] order).
fn current_lease(
    task: &mut TaskState,
    token: i64,
    worker_id: uuid::Uuid,
) -> Result<&mut Lease, Rejection> {
    match &mut task.status {
        TaskStatus::DeadLettered { .. } => Err(Rejection::DeadLettered),
        TaskStatus::Done { lease, .. } => Err(Rejection::Done { token: lease.token }),
        TaskStatus::Unclaimed => Err(Rejection::NeverClaimed),
        TaskStatus::Leased(lease) if lease.token != token => Err(Rejection::StaleToken {
            current_token: lease.token,
        }),
        TaskStatus::Leased(lease) if lease.worker_id != worker_id => {
            Err(Rejection::WorkerMismatch {
                holder_worker_id: lease.worker_id,
            })
        }
        TaskStatus::Leased(lease) => Ok(lease),
    }
}
