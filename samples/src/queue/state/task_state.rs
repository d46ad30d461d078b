//! What the log says about one task.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The lease granted by a winning claim, as renewed by later extends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// Fencing token: the offset of the winning claim in the `claims` partition.
    pub token: i64,
    /// The holder.
    pub worker_id: Uuid,
    /// `claimed_at_ms` of the winning claim (the holder's clock).
    pub claimed_at_ms: u64,
    /// When the lease lapses, in the writer's clock: `claimed_at_ms + lease_ms` of the claim, or
    /// `extended_at_ms + lease_ms` of the latest valid extend.
    pub expires_at_ms: u64,
    /// Valid extends applied to this lease.
    pub extends: u32,
}

impl Lease {
    /// Whether the lease still holds at `at_ms` (a lease covers `[start, expires_at_ms)`).
    ///
    /// The verdict calls this with the timestamp written in the next record; a worker may call it
    /// with its own clock to pick candidates, which is only a guess about the verdict.
    pub fn is_live_at(&self, at_ms: u64) -> bool {
        at_ms < self.expires_at_ms
    }
}

/// Where and when the task record was read from the `tasks` partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Submission {
    /// Offset of the task record in the `tasks` partition.
    pub offset: i64,
    /// `submitted_at_ms` of the task record.
    pub submitted_at_ms: u64,
    /// The task's payload, kept so a worker that picks the task can run it.
    pub payload: Vec<u8>,
}

/// The task's position in its life cycle, derived from the claims log only (no clock involved).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TaskStatus {
    /// No lease is current: no claim has won yet, or its holder released it (see
    /// [`TaskState::releases`]).
    Unclaimed,
    /// A claim has won and the task is not finished. The lease may have lapsed by now — only a
    /// clock can say, see [`Lease::is_live_at`] — but it stays current until a later claim
    /// supersedes it.
    Leased(Lease),
    /// A done with the current token was accepted. Terminal.
    Done {
        /// The lease under which the task completed (its token is the done's token).
        lease: Lease,
        /// Offset of the accepted done in the `claims` partition.
        done_offset: i64,
        /// `done_at_ms` of the accepted done.
        done_at_ms: u64,
    },
    /// Too many leases expired. Terminal.
    DeadLettered {
        /// Offset of the claim that moved the task here.
        offset: i64,
        /// The last lease, which expired.
        last_lease: Lease,
    },
}

/// Everything the logs say about one task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskState {
    /// The task.
    pub task_id: Uuid,
    /// The task record, once the `tasks` partition has been read that far. `None` for a task
    /// known so far only from the claims log.
    pub submission: Option<Submission>,
    /// Life-cycle state from the claims log.
    pub status: TaskStatus,
    /// Winning claims so far.
    pub wins: u32,
    /// Leases that expired and were superseded by a later claim.
    pub expired_leases: u32,
    /// Leases handed back by a valid release (they count no expiry).
    pub releases: u32,
}

impl TaskState {
    /// A task nothing is known about yet.
    pub(crate) fn new(task_id: Uuid) -> Self {
        Self {
            task_id,
            submission: None,
            status: TaskStatus::Unclaimed,
            wins: 0,
            expired_leases: 0,
            releases: 0,
        }
    }

    /// Done or dead-lettered: no claim can win any more.
    pub fn is_finished(&self) -> bool {
        matches!(
            self.status,
            TaskStatus::Done { .. } | TaskStatus::DeadLettered { .. }
        )
    }

    /// The current lease, if the task is leased (it may have lapsed by a clock).
    pub fn lease(&self) -> Option<&Lease> {
        match &self.status {
            TaskStatus::Leased(lease) => Some(lease),
            _ => None,
        }
    }

    /// Whether a worker whose clock reads `now_ms` should consider claiming the task: its record
    /// has been read, it is not finished, and no lease is live at `now_ms`.
    pub fn is_claimable_at(&self, now_ms: u64) -> bool {
        self.submission.is_some()
            && match &self.status {
                TaskStatus::Unclaimed => true,
                TaskStatus::Leased(lease) => !lease.is_live_at(now_ms),
                TaskStatus::Done { .. } | TaskStatus::DeadLettered { .. } => false,
            }
    }
}
