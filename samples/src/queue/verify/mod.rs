//! The verifier: replays both logs and checks the queue's promises, as a pure function.
//!
//! A verifier that merely re-ran the state machine would agree with every bug in it. So the
//! check is layered:
//!
//! 1. **Replay** the logs through [`QueueState`] and record the verdict on every claims record
//!    (a trace of [`TraceStep`]s).
//! 2. **Reference model** (private module `reference`): a second, naive implementation of the rules, written
//!    per task with local variables, re-derives every verdict; any difference is a
//!    [`Violation::VerdictDisagreement`].
//! 3. **Invariants** (private module `invariants`): properties the trace must have whatever the rules say —
//!    at most one accepted done per task; every accepted done carries the token of the last
//!    claim that won before it; a claim displaces a lease only after it expired; nothing wins
//!    after a task finished; no more wins than the attempt limit; every claimed task exists.
//! 4. **Counters**: the state machine's running [`Counters`]
//!    must equal the verifier's own count over the trace.
//! 5. **Lost tasks**: every submitted task is completed, dead-lettered, in flight, pending or
//!    lost, as of a clock reading the caller passes in ([`VerifyConfig`]).
//!
//! [`verify_trace`] runs steps 2, 3 and 5 on a trace from anywhere, which is how the verifier
//! itself is tested against forged verdicts.

mod invariants;
mod reference;
mod summary;
mod violation;

pub use summary::Summary;
pub use violation::{VerdictKind, Violation};

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::queue::record::{ClaimsRecord, Task};
use crate::queue::state::{Counters, Event, LogName, QueueConfig, QueueState};

/// How to verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyConfig {
    /// The verdict parameters the workers used.
    pub queue: QueueConfig,
    /// The clock reading at which "in flight" (lease live) and "idle" are judged, in ms since the
    /// Unix epoch; typically the verifier's own clock, or the last timestamp in the logs.
    pub as_of_ms: u64,
    /// An unfinished task not under a live lease counts as **lost** once it has been idle this
    /// long (since its submission or the expiry of its last lease); before that it is
    /// **pending**. Use 0 after a run has drained (everything should be finished), or a few lease
    /// lengths to check a live system.
    pub lost_after_ms: u64,
}

impl VerifyConfig {
    /// For a run that has drained, judged at `as_of_ms`: the default verdict parameters, and
    /// every unfinished task not under a live lease counts as lost at once.
    pub fn drained_at(as_of_ms: u64) -> Self {
        Self {
            queue: QueueConfig::default(),
            as_of_ms,
            lost_after_ms: 0,
        }
    }
}

/// The verdict on one claims record, as the state machine (or a forger) reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceStep {
    /// The record's offset in `claims`.
    pub offset: i64,
    /// The record.
    pub record: ClaimsRecord,
    /// The verdict on it.
    pub event: Event,
}

/// What the verifier found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// The numbers.
    pub summary: Summary,
    /// Every broken promise, in a deterministic order (by kind of check, then log order).
    pub violations: Vec<Violation>,
}

impl Report {
    /// No promise was broken.
    pub fn is_clean(&self) -> bool {
        self.violations.is_empty()
    }
}

/// Verifies decoded logs: `tasks` and `claims` as `(offset, record)` in log order.
pub fn verify(
    tasks: &[(i64, Task)],
    claims: &[(i64, ClaimsRecord)],
    config: &VerifyConfig,
) -> Report {
    let (state, trace, mut replay_violations) = replay(tasks, claims, config.queue);
    let mut report = verify_trace(tasks, &trace, config);
    replay_violations.append(&mut report.violations);
    report.violations = replay_violations;
    cross_check_counters(state.counters(), &report.summary, &mut report.violations);
    report
}

/// Verifies raw logs: decodes every record first. Undecodable records are reported as
/// [`Violation::UndecodableRecord`], counted in [`Summary::undecodable_records`], and skipped.
pub fn verify_encoded<T: AsRef<[u8]>, C: AsRef<[u8]>>(
    tasks: &[(i64, T)],
    claims: &[(i64, C)],
    config: &VerifyConfig,
) -> Report {
    let mut undecodable = Vec::new();
    let decoded_tasks = decode_all(LogName::Tasks, tasks, Task::decode, &mut undecodable);
    let decoded_claims = decode_all(
        LogName::Claims,
        claims,
        ClaimsRecord::decode,
        &mut undecodable,
    );
    let mut report = verify(&decoded_tasks, &decoded_claims, config);
    report.summary.undecodable_records = undecodable.len() as u64;
    undecodable.append(&mut report.violations);
    report.violations = undecodable;
    report
}

/// Replays both logs through a fresh [`QueueState`]: the final state, the verdict on every
/// applied claims record, and a [`Violation::OffsetOrder`] for every record refused (skipped).
pub fn replay(
    tasks: &[(i64, Task)],
    claims: &[(i64, ClaimsRecord)],
    config: QueueConfig,
) -> (QueueState, Vec<TraceStep>, Vec<Violation>) {
    let mut state = QueueState::new(config);
    let mut violations = Vec::new();
    for (offset, task) in tasks {
        if let Err(error) = state.apply_task(*offset, task) {
            violations.push(Violation::OffsetOrder { error });
        }
    }
    let mut trace = Vec::with_capacity(claims.len());
    for (offset, record) in claims {
        match state.apply_claims_record(*offset, record) {
            Ok(event) => trace.push(TraceStep {
                offset: *offset,
                record: record.clone(),
                event,
            }),
            Err(error) => violations.push(Violation::OffsetOrder { error }),
        }
    }
    (state, trace, violations)
}

/// Checks a trace of verdicts (from [`replay`], or forged) against the tasks log: reference
/// model, invariants and lost tasks. The trace must be in claims-log order.
pub fn verify_trace(tasks: &[(i64, Task)], trace: &[TraceStep], config: &VerifyConfig) -> Report {
    let max_expired_leases = config.queue.max_expired_leases.get();
    let mut summary = Summary::default();

    // The tasks log: the first record of an id counts.
    let mut submitted_at_ms: HashMap<Uuid, u64> = HashMap::new();
    let mut submission_order = Vec::new();
    for (_, task) in tasks {
        match submitted_at_ms.entry(task.task_id) {
            Entry::Occupied(_) => summary.duplicate_tasks += 1,
            Entry::Vacant(vacant) => {
                vacant.insert(task.submitted_at_ms);
                submission_order.push(task.task_id);
            }
        }
    }
    summary.tasks = submission_order.len() as u64;

    // The claims log, grouped by task in order of first appearance.
    let mut disagreements_outside_tasks = Vec::new();
    let mut steps_by_task: HashMap<Uuid, Vec<&TraceStep>> = HashMap::new();
    let mut claim_order = Vec::new();
    for step in trace {
        let Some(task_id) = step.record.task_id() else {
            // A heartbeat: about its writer, checked only for fitting its record.
            if matches!(step.event, Event::Heartbeat { .. }) {
                summary.heartbeats += 1;
            } else {
                disagreements_outside_tasks.push(Violation::EventDoesNotMatchRecord {
                    offset: step.offset,
                    task_id: Uuid::nil(),
                    detail: format!("a heartbeat cannot produce {:?}", step.event),
                });
            }
            continue;
        };
        steps_by_task
            .entry(task_id)
            .or_insert_with(|| {
                claim_order.push(task_id);
                Vec::new()
            })
            .push(step);
    }

    let mut unknown_task_violations = Vec::new();
    for step in trace {
        if let ClaimsRecord::Claim(claim) = &step.record
            && !submitted_at_ms.contains_key(&claim.task_id)
        {
            summary.unknown_task_claims += 1;
            unknown_task_violations.push(Violation::ClaimForUnknownTask {
                offset: step.offset,
                task_id: claim.task_id,
            });
        }
    }

    let mut disagreements = Vec::new();
    let mut invariant_violations = Vec::new();
    let mut counts = invariants::TraceCounts::default();
    let mut facts_by_task = HashMap::new();
    for task_id in &claim_order {
        let steps = &steps_by_task[task_id];
        let records: Vec<&ClaimsRecord> = steps.iter().map(|step| &step.record).collect();
        let offsets: Vec<i64> = steps.iter().map(|step| step.offset).collect();
        let expected = reference::expected_verdicts(
            &records,
            &offsets,
            max_expired_leases,
            config.queue.max_lease_ms,
        );
        for (step, expected) in steps.iter().zip(expected) {
            if VerdictKind::of(&step.event) != expected {
                disagreements.push(Violation::VerdictDisagreement {
                    offset: step.offset,
                    task_id: *task_id,
                    expected,
                    found: step.event.clone(),
                });
            }
        }
        let facts = invariants::check_task(
            *task_id,
            steps,
            config.queue,
            &mut counts,
            &mut invariant_violations,
        );
        summary.duplicate_executions += facts.wins.len().saturating_sub(1) as u64;
        summary.confirmed_duplicate_executions += confirmed_duplicates(steps, &facts.wins);
        summary.duplicate_effects += u64::from(facts.accepted_dones.saturating_sub(1));
        summary.max_wins_per_task = summary.max_wins_per_task.max(facts.wins.len() as u32);
        facts_by_task.insert(*task_id, facts);
    }
    summary.claims = counts.claims;
    summary.wins = counts.wins;
    summary.lost_races = counts.lost_races;
    summary.expired_leases = counts.expired_leases;
    summary.extends = counts.extends;
    summary.void_extends = counts.void_extends;
    summary.dones_accepted = counts.dones_accepted;
    summary.fenced_dones = counts.fenced_dones;
    summary.repeated_dones = counts.repeated_dones;
    summary.releases = counts.releases;
    summary.void_releases = counts.void_releases;

    let mut lost_violations = Vec::new();
    for task_id in &submission_order {
        let facts = facts_by_task.get(task_id);
        let outcome = classify(submitted_at_ms[task_id], facts, config);
        match outcome {
            Outcome::Completed => summary.completed += 1,
            Outcome::DeadLettered => summary.dead_lettered += 1,
            Outcome::InFlight => summary.in_flight += 1,
            Outcome::Pending => summary.pending += 1,
            Outcome::Lost { idle_since_ms } => {
                summary.lost += 1;
                lost_violations.push(Violation::TaskLost {
                    task_id: *task_id,
                    idle_since_ms,
                });
            }
        }
    }
    summary.never_completed = summary.tasks - summary.completed;

    let mut violations = unknown_task_violations;
    violations.append(&mut disagreements_outside_tasks);
    violations.append(&mut disagreements);
    violations.append(&mut invariant_violations);
    violations.append(&mut lost_violations);
    Report {
        summary,
        violations,
    }
}

/// Where a submitted task stands as of `config.as_of_ms`.
enum Outcome {
    Completed,
    DeadLettered,
    InFlight,
    Pending,
    Lost { idle_since_ms: u64 },
}

fn classify(
    submitted_at_ms: u64,
    facts: Option<&invariants::TaskFacts>,
    config: &VerifyConfig,
) -> Outcome {
    let lease_expires_at_ms = facts.and_then(|facts| facts.lease_expires_at_ms);
    match facts {
        Some(facts) if facts.accepted_dones > 0 => return Outcome::Completed,
        Some(facts) if facts.dead_lettered => return Outcome::DeadLettered,
        _ => {}
    }
    if lease_expires_at_ms.is_some_and(|expires_at_ms| config.as_of_ms < expires_at_ms) {
        return Outcome::InFlight;
    }
    // Idle since the last lease lapsed, or was released, or since submission.
    let released_at_ms = facts.and_then(|facts| facts.released_at_ms);
    let idle_since_ms = lease_expires_at_ms
        .or(released_at_ms)
        .map_or(submitted_at_ms, |since_ms| since_ms.max(submitted_at_ms));
    if config.as_of_ms.saturating_sub(idle_since_ms) >= config.lost_after_ms {
        Outcome::Lost { idle_since_ms }
    } else {
        Outcome::Pending
    }
}

/// Superseded holders (every winner but the last) that wrote an extend or a done with their
/// token, i.e. were demonstrably working when the task was granted again.
fn confirmed_duplicates(steps: &[&TraceStep], wins: &[(i64, Uuid)]) -> u64 {
    let superseded = wins.split_last().map_or(&[][..], |(_, earlier)| earlier);
    superseded
        .iter()
        .filter(|&&(token, worker_id)| {
            steps.iter().any(|step| match &step.record {
                ClaimsRecord::Extend(extend) => {
                    extend.token == token && extend.worker_id == worker_id
                }
                ClaimsRecord::Done(done) => done.token == token && done.worker_id == worker_id,
                ClaimsRecord::Release(release) => {
                    release.token == token && release.worker_id == worker_id
                }
                ClaimsRecord::Claim(_) | ClaimsRecord::Heartbeat(_) => false,
            })
        })
        .count() as u64
}

fn decode_all<B: AsRef<[u8]>, R, E: std::fmt::Display>(
    log: LogName,
    records: &[(i64, B)],
    decode: impl Fn(&[u8]) -> Result<R, E>,
    undecodable: &mut Vec<Violation>,
) -> Vec<(i64, R)> {
    let mut decoded = Vec::with_capacity(records.len());
    for (offset, bytes) in records {
        match decode(bytes.as_ref()) {
            Ok(record) => decoded.push((*offset, record)),
            Err(error) => undecodable.push(Violation::UndecodableRecord {
                log,
                offset: *offset,
                error: error.to_string(),
            }),
        }
    }
    decoded
}

fn cross_check_counters(counters: &Counters, summary: &Summary, violations: &mut Vec<Violation>) {
    let pairs = [
        ("tasks", counters.tasks, summary.tasks),
        (
            "duplicate_tasks",
            counters.duplicate_tasks,
            summary.duplicate_tasks,
        ),
        ("claims", counters.claims, summary.claims),
        ("wins", counters.wins, summary.wins),
        ("lost_races", counters.lost_races, summary.lost_races),
        (
            "expired_leases",
            counters.expired_leases,
            summary.expired_leases,
        ),
        ("extends", counters.extends, summary.extends),
        ("void_extends", counters.void_extends, summary.void_extends),
        (
            "dones_accepted",
            counters.dones_accepted,
            summary.dones_accepted,
        ),
        ("fenced_dones", counters.fenced_dones, summary.fenced_dones),
        (
            "repeated_dones",
            counters.repeated_dones,
            summary.repeated_dones,
        ),
        ("releases", counters.releases, summary.releases),
        (
            "void_releases",
            counters.void_releases,
            summary.void_releases,
        ),
        ("heartbeats", counters.heartbeats, summary.heartbeats),
    ];
    for (counter, state_machine, trace) in pairs {
        if state_machine != trace {
            violations.push(Violation::CounterMismatch {
                counter: counter.to_owned(),
                state_machine,
                trace,
            });
        }
    }
}
