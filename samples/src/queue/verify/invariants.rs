//! Properties every correct trace has, checked one task at a time.
//!
//! These checks are phrased as *properties* (at most one accepted done, every accepted done
//! carries the token of the last win before it, no two live leases at once, …), not as rules.
//! The reference model ([`super::reference`]) catches a state machine that departs from the
//! rules; these catch rules — shared by both models — that fail to deliver the promises.

use uuid::Uuid;

use super::TraceStep;
use super::violation::Violation;
use crate::queue::record::ClaimsRecord;
use crate::queue::state::{Event, QueueConfig};

/// What the trace says about one task, for the summary and the lost-task check.
#[derive(Debug, Default)]
pub(super) struct TaskFacts {
    /// `(token, worker)` of each winning claim, in log order.
    pub wins: Vec<(i64, Uuid)>,
    /// Dones accepted.
    pub accepted_dones: u32,
    /// A claim dead-lettered the task.
    pub dead_lettered: bool,
    /// Expiry of the last granted lease (after valid extends), if a lease is current.
    pub lease_expires_at_ms: Option<u64>,
    /// When the last lease was released, if it was and no claim has won since.
    pub released_at_ms: Option<u64>,
}

/// Event totals, counted here independently of [`crate::queue::state::Counters`].
#[derive(Debug, Default)]
pub(super) struct TraceCounts {
    pub claims: u64,
    pub wins: u64,
    pub lost_races: u64,
    pub expired_leases: u64,
    pub extends: u64,
    pub void_extends: u64,
    pub dones_accepted: u64,
    pub fenced_dones: u64,
    pub repeated_dones: u64,
    pub releases: u64,
    pub void_releases: u64,
}

/// The lease as this check tracks it.
#[derive(Debug, Clone, Copy)]
struct Holder {
    token: i64,
    worker_id: Uuid,
    expires_at_ms: u64,
}

/// Checks one task's steps (in log order), adding to `counts` and `violations`.
pub(super) fn check_task(
    task_id: Uuid,
    steps: &[&TraceStep],
    queue: QueueConfig,
    counts: &mut TraceCounts,
    violations: &mut Vec<Violation>,
) -> TaskFacts {
    let max_expired_leases = queue.max_expired_leases.get();
    let mut facts = TaskFacts::default();
    let mut holder: Option<Holder> = None;
    let mut first_accepted_token: Option<i64> = None;
    // Leases superseded after they expired (a release supersedes nothing).
    let mut expired = 0_u32;

    for step in steps {
        let offset = step.offset;
        count(&step.event, counts);
        if let Err(detail) = event_matches_record(step) {
            violations.push(Violation::EventDoesNotMatchRecord {
                offset,
                task_id,
                detail,
            });
            continue;
        }
        let finished = first_accepted_token.is_some() || facts.dead_lettered;
        match (&step.record, &step.event) {
            (ClaimsRecord::Claim(claim), Event::ClaimWon { token, .. }) => {
                check_lease_length(claim.lease_ms, queue, offset, task_id, violations);
                if *token != offset {
                    violations.push(Violation::TokenIsNotClaimOffset {
                        offset,
                        task_id,
                        token: *token,
                    });
                }
                if finished {
                    violations.push(after_finish(step, task_id));
                }
                let expired_after = expired + u32::from(holder.is_some());
                if expired_after >= max_expired_leases {
                    violations.push(Violation::AttemptLimitBroken {
                        offset,
                        task_id,
                        wins: expired_after,
                        max_expired_leases,
                    });
                }
                if let Some(previous) = holder {
                    check_lapsed(previous, claim.claimed_at_ms, offset, task_id, violations);
                    counts.expired_leases += 1;
                    expired += 1;
                }
                facts.released_at_ms = None;
                let granted = Holder {
                    token: offset,
                    worker_id: claim.worker_id,
                    expires_at_ms: claim.claimed_at_ms.saturating_add(claim.lease_ms),
                };
                facts.wins.push((granted.token, granted.worker_id));
                holder = Some(granted);
            }
            (ClaimsRecord::Claim(claim), Event::TaskDeadLettered { .. }) => {
                if finished {
                    violations.push(after_finish(step, task_id));
                }
                let expired_after = expired + u32::from(holder.is_some());
                if expired_after != max_expired_leases {
                    violations.push(Violation::AttemptLimitBroken {
                        offset,
                        task_id,
                        wins: expired_after,
                        max_expired_leases,
                    });
                }
                if let Some(previous) = holder {
                    check_lapsed(previous, claim.claimed_at_ms, offset, task_id, violations);
                }
                counts.expired_leases += 1;
                facts.dead_lettered = true;
            }
            (ClaimsRecord::Extend(extend), Event::Extended { .. }) => {
                check_lease_length(extend.lease_ms, queue, offset, task_id, violations);
                if finished {
                    violations.push(after_finish(step, task_id));
                }
                if let Some(current) = holder.as_mut()
                    && current.token == extend.token
                {
                    current.expires_at_ms = extend.extended_at_ms.saturating_add(extend.lease_ms);
                }
            }
            (ClaimsRecord::Release(release), Event::Released { .. }) => {
                if finished {
                    violations.push(after_finish(step, task_id));
                }
                let from_holder = holder
                    .is_some_and(|h| h.token == release.token && h.worker_id == release.worker_id);
                if !from_holder {
                    violations.push(Violation::ReleaseWithoutCurrentToken {
                        offset,
                        task_id,
                        token: release.token,
                        current_token: holder.map(|h| h.token),
                    });
                }
                holder = None;
                facts.released_at_ms = Some(release.released_at_ms);
            }
            (ClaimsRecord::Done(done), Event::DoneAccepted { .. }) => {
                if let Some(first_token) = first_accepted_token {
                    violations.push(Violation::CompletedTwice {
                        offset,
                        task_id,
                        first_token,
                        second_token: done.token,
                    });
                } else if facts.dead_lettered {
                    violations.push(after_finish(step, task_id));
                }
                let carries_current_token =
                    holder.is_some_and(|h| h.token == done.token && h.worker_id == done.worker_id);
                if !carries_current_token {
                    violations.push(Violation::DoneWithoutCurrentToken {
                        offset,
                        task_id,
                        token: done.token,
                        current_token: holder.map(|h| h.token),
                    });
                }
                facts.accepted_dones += 1;
                first_accepted_token.get_or_insert(done.token);
            }
            // Losses, void extends, fenced and repeated dones change nothing.
            _ => {}
        }
    }
    facts.lease_expires_at_ms = holder.map(|h| h.expires_at_ms);
    facts
}

fn count(event: &Event, counts: &mut TraceCounts) {
    match event {
        Event::ClaimWon { .. } => {
            counts.claims += 1;
            counts.wins += 1;
        }
        Event::ClaimLost { .. } => {
            counts.claims += 1;
            counts.lost_races += 1;
        }
        Event::TaskDeadLettered { .. } => counts.claims += 1,
        Event::Extended { .. } => counts.extends += 1,
        Event::ExtendVoid { .. } => counts.void_extends += 1,
        Event::DoneAccepted { .. } => counts.dones_accepted += 1,
        Event::DoneRepeated { .. } => counts.repeated_dones += 1,
        Event::DoneFenced { .. } => counts.fenced_dones += 1,
        Event::Released { .. } => counts.releases += 1,
        Event::ReleaseVoid { .. } => counts.void_releases += 1,
        // Heartbeats are never grouped under a task (`verify_trace` counts them).
        Event::Heartbeat { .. } => {}
    }
}

/// No lease granted or renewed is longer than the queue's maximum.
fn check_lease_length(
    lease_ms: u64,
    queue: QueueConfig,
    offset: i64,
    task_id: Uuid,
    violations: &mut Vec<Violation>,
) {
    if lease_ms > queue.max_lease_ms {
        violations.push(Violation::LeaseTooLong {
            offset,
            task_id,
            lease_ms,
            max_lease_ms: queue.max_lease_ms,
        });
    }
}

/// A claim may displace a lease only once that lease has expired at the claim's timestamp.
fn check_lapsed(
    previous: Holder,
    claimed_at_ms: u64,
    offset: i64,
    task_id: Uuid,
    violations: &mut Vec<Violation>,
) {
    if claimed_at_ms < previous.expires_at_ms {
        violations.push(Violation::LeaseOverlap {
            offset,
            task_id,
            claimed_at_ms,
            previous_token: previous.token,
            previous_expires_at_ms: previous.expires_at_ms,
        });
    }
}

fn after_finish(step: &TraceStep, task_id: Uuid) -> Violation {
    Violation::ActivityAfterFinish {
        offset: step.offset,
        task_id,
        event: step.event.clone(),
    }
}

/// Whether the event can be the verdict on its record at all.
fn event_matches_record(step: &TraceStep) -> Result<(), String> {
    let record = &step.record;
    if step.event.task_id() != record.task_id() {
        return Err(format!(
            "event names task {:?} but the record names {:?}",
            step.event.task_id(),
            record.task_id()
        ));
    }
    match (record, &step.event) {
        (
            ClaimsRecord::Claim(claim),
            Event::ClaimWon {
                worker_id,
                expires_at_ms,
                ..
            },
        ) => {
            if *worker_id != claim.worker_id {
                return Err(format!(
                    "winner {worker_id} is not the claimer {}",
                    claim.worker_id
                ));
            }
            let expected = claim.claimed_at_ms.saturating_add(claim.lease_ms);
            if *expires_at_ms != expected {
                return Err(format!(
                    "lease expires at {expires_at_ms}, the claim says {expected}"
                ));
            }
            Ok(())
        }
        (ClaimsRecord::Claim(_), Event::ClaimLost { .. } | Event::TaskDeadLettered { .. }) => {
            Ok(())
        }
        (
            ClaimsRecord::Extend(extend),
            Event::Extended {
                token,
                expires_at_ms,
                ..
            },
        ) => {
            let expected = extend.extended_at_ms.saturating_add(extend.lease_ms);
            if *token != extend.token || *expires_at_ms != expected {
                return Err(format!(
                    "extended token {token} until {expires_at_ms}, the extend says token {} until {expected}",
                    extend.token
                ));
            }
            Ok(())
        }
        (ClaimsRecord::Extend(extend), Event::ExtendVoid { token, .. })
            if *token != extend.token =>
        {
            Err(format!(
                "void extend reports token {token}, the extend carries {}",
                extend.token
            ))
        }
        (ClaimsRecord::Extend(_), Event::ExtendVoid { .. }) => Ok(()),
        (
            ClaimsRecord::Done(done),
            Event::DoneAccepted { token, .. }
            | Event::DoneRepeated { token, .. }
            | Event::DoneFenced { token, .. },
        ) => {
            if *token == done.token {
                Ok(())
            } else {
                Err(format!(
                    "done verdict reports token {token}, the done carries {}",
                    done.token
                ))
            }
        }
        (
            ClaimsRecord::Release(release),
            Event::Released { token, .. } | Event::ReleaseVoid { token, .. },
        ) => {
            if *token == release.token {
                Ok(())
            } else {
                Err(format!(
                    "release verdict reports token {token}, the release carries {}",
                    release.token
                ))
            }
        }
        (record, event) => Err(format!(
            "a {} record cannot produce {event:?}",
            match record {
                ClaimsRecord::Claim(_) => "claim",
                ClaimsRecord::Extend(_) => "extend",
                ClaimsRecord::Done(_) => "done",
                ClaimsRecord::Release(_) => "release",
                ClaimsRecord::Heartbeat(_) => "heartbeat",
            }
        )),
    }
}
