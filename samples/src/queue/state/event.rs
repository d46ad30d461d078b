//! What applying one record did: the events of the state machine.
//!
//! A worker learns the verdict on its own record from the event returned when its follower
//! applies the record at the offset its append returned. Events carry the reason for every
//! refusal, so the load harness can account for lost work without re-deriving the rules.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Outcome of applying one record of the `tasks` partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TaskEvent {
    /// First record with this `task_id`: the task now exists.
    Submitted {
        /// The new task.
        task_id: Uuid,
    },
    /// Another record with an id already seen; ignored (the first submission counts).
    DuplicateSubmission {
        /// The repeated id.
        task_id: Uuid,
        /// Offset of the submission that counts.
        first_offset: i64,
    },
}

/// Outcome of applying one record of the `claims` partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Event {
    /// The claim won: its writer holds the lease, and the claim's offset is the fencing token.
    ClaimWon {
        /// The claimed task.
        task_id: Uuid,
        /// The new holder.
        worker_id: Uuid,
        /// Fencing token of the new lease: the offset of this claim.
        token: i64,
        /// `claimed_at_ms + lease_ms` of the claim.
        expires_at_ms: u64,
        /// 1 for the first win on this task, 2 for the second (after an expired lease or a
        /// release), and so on.
        attempt: u32,
        /// The claim superseded a lease that had expired (counted in the task's expired leases);
        /// `false` for a first win and for a win after a release.
        after_expiry: bool,
    },
    /// The claim lost; nothing changed.
    ClaimLost {
        /// The claimed task.
        task_id: Uuid,
        /// Why it lost.
        reason: ClaimLostReason,
    },
    /// The claim found the current lease expired, and that was the task's last allowed expiry
    /// ([`QueueConfig::max_expired_leases`](super::QueueConfig)): instead of winning, the claim
    /// moved the task to the dead-letter state. Nobody holds the task any more.
    TaskDeadLettered {
        /// The dead task.
        task_id: Uuid,
        /// Expired leases counted, equal to the configured maximum.
        expired_leases: u32,
    },
    /// The extend renewed the current lease.
    Extended {
        /// The task.
        task_id: Uuid,
        /// The renewed lease's token.
        token: i64,
        /// New expiry: `extended_at_ms + lease_ms` of the extend.
        expires_at_ms: u64,
    },
    /// The extend had no effect.
    ExtendVoid {
        /// The task named by the extend.
        task_id: Uuid,
        /// The token the extend carried.
        token: i64,
        /// Why it is void.
        reason: Rejection,
    },
    /// The done carried the current token: the task is complete and its result counts.
    DoneAccepted {
        /// The completed task.
        task_id: Uuid,
        /// The token under which it completed.
        token: i64,
    },
    /// The same holder's done again (e.g. a retried append) after its first one was accepted:
    /// harmless and without effect. Counted apart from fenced dones because no work was lost.
    DoneRepeated {
        /// The task.
        task_id: Uuid,
        /// The accepted token, which this done carries too.
        token: i64,
    },
    /// The done was refused: its result does not count.
    DoneFenced {
        /// The task named by the done.
        task_id: Uuid,
        /// The token the done carried.
        token: i64,
        /// Why it was refused.
        reason: Rejection,
    },
    /// The holder released its lease: the task is free at once, and no expiry is counted.
    Released {
        /// The task.
        task_id: Uuid,
        /// The released lease's token.
        token: i64,
    },
    /// A worker's heartbeat: it counts as live until `live_until_ms`. About no task.
    Heartbeat {
        /// The worker.
        worker_id: Uuid,
        /// `at_ms + lease_ms` of the heartbeat.
        live_until_ms: u64,
    },
    /// The release had no effect (reasons as for extends).
    ReleaseVoid {
        /// The task named by the release.
        task_id: Uuid,
        /// The token the release carried.
        token: i64,
        /// Why it is void.
        reason: Rejection,
    },
}

impl Event {
    /// The task the event is about; `None` for a heartbeat.
    pub fn task_id(&self) -> Option<Uuid> {
        Some(match self {
            Self::ClaimWon { task_id, .. }
            | Self::ClaimLost { task_id, .. }
            | Self::TaskDeadLettered { task_id, .. }
            | Self::Extended { task_id, .. }
            | Self::ExtendVoid { task_id, .. }
            | Self::DoneAccepted { task_id, .. }
            | Self::DoneRepeated { task_id, .. }
            | Self::DoneFenced { task_id, .. }
            | Self::Released { task_id, .. }
            | Self::ReleaseVoid { task_id, .. } => *task_id,
            Self::Heartbeat { .. } => return None,
        })
    }
}

/// Why a claim lost.
///
/// There is deliberately no "unknown task" reason: the verdict on a claim depends on the claims
/// log only, never on how far the reader has read the `tasks` log (see the module docs of
/// [`crate::queue::state`]). Claims for tasks that never appear are caught by the verifier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClaimLostReason {
    /// Someone holds a lease that had not expired at the claim's own `claimed_at_ms`.
    AlreadyLeased {
        /// Token of the live lease.
        holder_token: i64,
        /// Its holder (a worker whose claim append was retried finds itself here).
        holder_worker_id: Uuid,
        /// When that lease expires.
        expires_at_ms: u64,
    },
    /// The task is already complete.
    Done {
        /// The token it completed under.
        token: i64,
    },
    /// The task is dead-lettered.
    DeadLettered,
    /// The claim asked for a lease longer than [`QueueConfig::max_lease_ms`](super::QueueConfig):
    /// void, whatever the task's state (checked first).
    LeaseTooLong {
        /// The lease asked for.
        lease_ms: u64,
        /// The queue's maximum.
        max_lease_ms: u64,
    },
}

/// Why an extend is void or a done is fenced. Checked in the order listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Rejection {
    /// The task is dead-lettered.
    DeadLettered,
    /// The task is complete (under `token`; for a done this is a different holder's token).
    Done {
        /// The token it completed under.
        token: i64,
    },
    /// No token is current: no claim on this task has ever won, or the holder released it.
    NeverClaimed,
    /// The record's token is not the current lease's: another claim has won since (or the token
    /// never belonged to this task).
    StaleToken {
        /// The token that is current.
        current_token: i64,
    },
    /// The token is current but the record's `worker_id` is not the holder's: a forged or buggy
    /// record.
    WorkerMismatch {
        /// The holder of the current lease.
        holder_worker_id: Uuid,
    },
    /// Extends and releases: the record's timestamp was not before the lease's expiry, so the lease had lapsed
    /// and cannot be renewed (a new claim is needed).
    Expired {
        /// The expiry that had passed.
        expires_at_ms: u64,
    },
    /// Extends only: the extend asked for a lease longer than
    /// [`QueueConfig::max_lease_ms`](super::QueueConfig), so it renews nothing.
    LeaseTooLong {
        /// The lease asked for.
        lease_ms: u64,
        /// The queue's maximum.
        max_lease_ms: u64,
    },
}
