//! The verdict: a pure, deterministic state machine over the `tasks` and `claims` logs.
//!
//! There is no coordinator. Every worker (and the verifier) folds the same claims partition
//! through [`QueueState`] and, because the partition's order is the same for every reader and the
//! rules read no clock, every reader computes the same winner for every claim. That is the whole
//! trick: the order of the log is the arbiter.
//!
//! # Rules (see `docs/task-queue.md` for the argument behind each)
//!
//! * **Lease maximum.** A claim or an extend asking for more than
//!   [`QueueConfig::max_lease_ms`] is void, whatever the task's state; a void claim counts no
//!   expiry.
//! * **Claim.** Wins if the task is not done, not dead-lettered, and either no claim has won it
//!   yet or the current lease had expired at the claim's own timestamp
//!   (`claimed_at_ms >= expires_at_ms`). The winning claim's offset is the **fencing token**; the
//!   lease expires at `claimed_at_ms + lease_ms`.
//! * **Expiry and dead letters.** A claim that finds the current lease expired counts one expired
//!   lease for the task. When that makes `max_expired_leases` expiries, the claim does not win:
//!   it moves the task to the dead-letter state ([`Event::TaskDeadLettered`]).
//! * **Extend.** Renews the lease to `extended_at_ms + lease_ms` if it carries the current token,
//!   comes from the holder, and `extended_at_ms < expires_at_ms`. Otherwise void.
//! * **Release.** Frees the task at once (unclaimed again, no expiry counted) if it carries the
//!   current token, comes from the holder, and `released_at_ms < expires_at_ms`. Otherwise void.
//! * **Done.** Accepted if it carries the current token and comes from the holder, whenever it
//!   arrives, as long as no later claim has won (which would have changed the token). Refused
//!   ("fenced") otherwise. A repeat of the accepted done by the same holder is a no-op.
//!
//! # Tasks the claims reader has not seen yet
//!
//! The two partitions are read by two followers that need not be level: a reader can meet a claim
//! for a task whose record it has not read yet. The verdict therefore **ignores the tasks log**:
//! a claim is judged on the claims log alone, as if the task existed. Otherwise two readers at
//! different positions in the tasks log would disagree about the same claim. Workers only claim
//! tasks they have read, so in a healthy system every claimed task exists; the verifier
//! ([`crate::queue::verify`]), which has both logs in full, reports claims for tasks that never
//! appear. The tasks log matters only to [`QueueState::candidates`]: a task is offered to a worker
//! only once its record (and payload) has been read.
//!
//! # Clocks
//!
//! Only [`QueueState::candidates`] (and [`claimable`](QueueState::claimable),
//! [`pick`](QueueState::pick) and [`next_lapse_after`](QueueState::next_lapse_after), built on
//! the same index) take a clock reading, and they only propose candidates; the verdict on the
//! resulting claim is made from the timestamps in the records.
//!
//! # Heartbeats
//!
//! A [`Heartbeat`](crate::queue::record::Heartbeat) is about its writer, not a task: it gets
//! [`Event::Heartbeat`] and changes no task. Every record notes its writer as live for the lease
//! it states (`liveness.rs`), which only [`rendezvous_pick`](QueueState::rendezvous_pick) reads.
//!
//! # Picking without a scan
//!
//! Every worker picks a task before every claim. The state keeps its open tasks in an index
//! (`claimable`, one submodule) so that a pick costs O(log n) — plus the number of leases that
//! have lapsed without being claimed again, normally few — instead of a pass over every open task.

mod claimable;
mod config;
mod counters;
mod event;
mod liveness;
mod task_state;
mod verdict;

#[cfg(test)]
mod tests;

pub use claimable::Candidates;
pub use config::{DEFAULT_MAX_EXPIRED_LEASES, DEFAULT_MAX_LEASE_MS, QueueConfig};
pub use counters::Counters;
pub use event::{ClaimLostReason, Event, Rejection, TaskEvent};
pub use task_state::{Lease, Submission, TaskState, TaskStatus};

use std::collections::HashMap;
use std::fmt;

use rand::Rng;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::queue::pick::rendezvous::RENDEZVOUS_BACKLOG_PER_WORKER;
use crate::queue::pick::{Pick, Ranked, rendezvous};
use crate::queue::record::{ClaimsRecord, Task};
use claimable::ClaimableIndex;
use liveness::Liveness;

/// Which partition an offset belongs to (for error messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LogName {
    /// The `tasks` partition.
    Tasks,
    /// The `claims` partition.
    Claims,
}

impl fmt::Display for LogName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Tasks => "tasks",
            Self::Claims => "claims",
        })
    }
}

/// A record the state machine refuses to apply; the state is left unchanged.
///
/// Offsets must be non-negative and strictly increasing per partition. Applying a record twice
/// would count it twice (and a replayed claim could even win against its own lease), so a reader
/// that re-reads part of a log must skip what it has applied; this error catches the mistake.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum ApplyError {
    /// The offset is not after the last offset applied from the same partition.
    #[error("{log} offset {offset} is not after the last applied {log} offset {last_offset}")]
    OffsetNotIncreasing {
        /// The partition.
        log: LogName,
        /// The offending offset.
        offset: i64,
        /// The last offset applied from that partition.
        last_offset: i64,
    },
    /// Offsets are never negative.
    #[error("{log} offset {offset} is negative")]
    NegativeOffset {
        /// The partition.
        log: LogName,
        /// The offending offset.
        offset: i64,
    },
}

/// The queue as the logs describe it, after applying a prefix of each log.
///
/// Feed it every record of `tasks` through [`apply_task`](Self::apply_task) and every record of
/// `claims` through [`apply_claims_record`](Self::apply_claims_record), each in offset order and
/// each starting from the partition's first record (a reader that starts later does not know the
/// leases granted before its start and would judge differently from everyone else). The two logs
/// may be interleaved in any way: the verdicts do not depend on it.
///
/// Two states that applied the same records compare equal ([`PartialEq`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueState {
    config: QueueConfig,
    tasks: HashMap<Uuid, TaskState>,
    /// Submitted, unfinished tasks, indexed for [`candidates`](Self::candidates). Kept in step
    /// with `tasks`: every change to a [`TaskState`] is followed by [`ClaimableIndex::update`].
    open: ClaimableIndex,
    /// Which workers are live and idle, from their records: for rendezvous picks only.
    liveness: Liveness,
    counters: Counters,
    last_task_offset: Option<i64>,
    last_claims_offset: Option<i64>,
}

impl QueueState {
    /// An empty queue: nothing read yet from either partition.
    pub fn new(config: QueueConfig) -> Self {
        Self {
            config,
            tasks: HashMap::new(),
            open: ClaimableIndex::default(),
            liveness: Liveness::default(),
            counters: Counters::default(),
            last_task_offset: None,
            last_claims_offset: None,
        }
    }

    /// Applies the record at `offset` of the `tasks` partition.
    ///
    /// The first record with a given `task_id` counts; later ones are reported as
    /// [`TaskEvent::DuplicateSubmission`] and ignored.
    pub fn apply_task(&mut self, offset: i64, task: &Task) -> Result<TaskEvent, ApplyError> {
        check_next_offset(LogName::Tasks, self.last_task_offset, offset)?;
        self.last_task_offset = Some(offset);
        let state = self
            .tasks
            .entry(task.task_id)
            .or_insert_with(|| TaskState::new(task.task_id));
        let event = if let Some(first) = &state.submission {
            TaskEvent::DuplicateSubmission {
                task_id: task.task_id,
                first_offset: first.offset,
            }
        } else {
            state.submission = Some(Submission {
                offset,
                submitted_at_ms: task.submitted_at_ms,
                payload: task.payload.clone(),
            });
            // A task known from claims already may enter the index leased, or not at all.
            self.open.update(state);
            TaskEvent::Submitted {
                task_id: task.task_id,
            }
        };
        self.counters.count_task(&event);
        Ok(event)
    }

    /// Applies the record at `offset` of the `claims` partition and returns the verdict on it:
    /// see `state/verdict.rs` (the dispatcher and the rules, in one file; a private module).
    pub fn apply_claims_record(
        &mut self,
        offset: i64,
        record: &ClaimsRecord,
    ) -> Result<Event, ApplyError> {
        check_next_offset(LogName::Claims, self.last_claims_offset, offset)?;
        self.last_claims_offset = Some(offset);
        let event = match record {
            // About its writer, not a task: no verdict to reach, only its liveness to note.
            ClaimsRecord::Heartbeat(heartbeat) => Event::Heartbeat {
                worker_id: heartbeat.worker_id,
                live_until_ms: heartbeat.at_ms.saturating_add(heartbeat.lease_ms),
            },
            _ => verdict::apply(&mut self.tasks, &mut self.open, self.config, offset, record),
        };
        self.liveness.note(record, &event, self.config.max_lease_ms);
        self.counters.count(&event);
        Ok(event)
    }

    /// The tasks a worker whose clock reads `now_ms` may try to claim: read from `tasks`, not
    /// finished, and not under a lease that is live at `now_ms` — exactly the tasks for which
    /// [`TaskState::is_claimable_at`] holds.
    ///
    /// This is where a clock enters, and it only proposes candidates: whether a claim wins is
    /// decided by the claim's own timestamp, in log order. Served from an index: costs O(log n)
    /// plus the number of leases that have lapsed by `now_ms` (without a new claim since).
    pub fn candidates(&self, now_ms: u64) -> Candidates<'_> {
        self.open.candidates(now_ms)
    }

    /// Chooses a task claimable at `now_ms` the way `pick` says; `rng` is only used by
    /// [`Pick::Random`]. Costs what [`candidates`](Self::candidates) costs, not a pass over the
    /// open tasks.
    pub fn pick<R: Rng + ?Sized>(&self, now_ms: u64, pick: Pick, rng: &mut R) -> Option<Uuid> {
        pick.choose(&self.candidates(now_ms), rng)
    }

    /// A [`Pick::Rendezvous`] for worker `me` at `now_ms`: the first scanned candidate `me` ranks
    /// first among the idle live workers — among all live workers in a backlog, when the
    /// candidates number at least [`RENDEZVOUS_BACKLOG_PER_WORKER`] per live worker, or when no
    /// other worker looks idle (`pick/rendezvous.rs`) — else the one where it ranks best
    /// (`ranked_first: false`). Costs O(workers) plus at most
    /// [`RENDEZVOUS_SCAN`](crate::queue::pick::RENDEZVOUS_SCAN) × ranked workers hashes, or in a
    /// backlog about two per scanned candidate.
    pub fn rendezvous_pick<R: Rng + ?Sized>(
        &self,
        now_ms: u64,
        me: Uuid,
        rng: &mut R,
    ) -> Option<Ranked> {
        let candidates = self.candidates(now_ms);
        let live: Vec<Uuid> = self.liveness.live_at(now_ms).collect();
        if candidates.len() >= RENDEZVOUS_BACKLOG_PER_WORKER * live.len().max(1) {
            return rendezvous::choose_in_backlog(&candidates, me, &live, rng);
        }
        let idle: Vec<Uuid> = self.liveness.idle_at(now_ms).collect();
        if idle.iter().all(|&worker| worker == me) {
            return rendezvous::choose(&candidates, me, &live, rng);
        }
        rendezvous::choose(&candidates, me, &idle, rng)
    }

    /// The workers live at `now_ms` by the claims log: their last record is younger than the
    /// lease it stated (see `liveness.rs`). O(workers seen in the last minute or so).
    pub fn live_workers(&self, now_ms: u64) -> Vec<Uuid> {
        self.liveness.live_at(now_ms).collect()
    }

    /// The [`candidates`](Self::candidates) at `now_ms`, oldest submission first. Meant for
    /// tests and reports: draining it costs O(claimable tasks).
    pub fn claimable(&self, now_ms: u64) -> impl Iterator<Item = Uuid> + '_ {
        self.candidates(now_ms).oldest_first()
    }

    /// The earliest moment after `now_ms` at which a current lease on a submitted, unfinished
    /// task lapses: when such a task becomes claimable without any new record. O(log n).
    pub fn next_lapse_after(&self, now_ms: u64) -> Option<u64> {
        self.open.next_lapse_after(now_ms)
    }

    /// Everything known about a task, from either log.
    pub fn task(&self, task_id: Uuid) -> Option<&TaskState> {
        self.tasks.get(&task_id)
    }

    /// The current lease on a task, if it is leased and not finished. The lease may have lapsed
    /// by a clock ([`Lease::is_live_at`]); it is current until a later claim supersedes it.
    pub fn lease(&self, task_id: Uuid) -> Option<&Lease> {
        self.tasks.get(&task_id).and_then(TaskState::lease)
    }

    /// Every task known from either log, in no particular order.
    pub fn tasks(&self) -> impl Iterator<Item = &TaskState> + '_ {
        self.tasks.values()
    }

    /// Tasks read from `tasks` that are neither done nor dead-lettered (leased or not).
    pub fn unfinished_count(&self) -> usize {
        self.open.open_count()
    }

    /// Running totals of all verdicts.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The verdict parameters this state was built with.
    pub fn config(&self) -> &QueueConfig {
        &self.config
    }

    /// Offset of the last record applied from `tasks`, if any.
    pub fn last_task_offset(&self) -> Option<i64> {
        self.last_task_offset
    }

    /// Offset of the last record applied from `claims`, if any. A worker waiting for the verdict
    /// on its record at offset `x` has it once this is `Some(o)` with `o >= x`.
    pub fn last_claims_offset(&self) -> Option<i64> {
        self.last_claims_offset
    }
}

fn check_next_offset(log: LogName, last: Option<i64>, offset: i64) -> Result<(), ApplyError> {
    if offset < 0 {
        return Err(ApplyError::NegativeOffset { log, offset });
    }
    match last {
        Some(last_offset) if offset <= last_offset => Err(ApplyError::OffsetNotIncreasing {
            log,
            offset,
            last_offset,
        }),
        _ => Ok(()),
    }
}
