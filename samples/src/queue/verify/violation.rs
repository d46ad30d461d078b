//! The ways a pair of logs (or a trace of verdicts over them) can break the queue's promises.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::queue::state::{ApplyError, Event, LogName};

/// The class of a verdict, without its details: what the reference model predicts for a record
/// and what an [`Event`] reports, compared by [`Violation::VerdictDisagreement`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum VerdictKind {
    /// [`Event::ClaimWon`].
    ClaimWon,
    /// [`Event::ClaimLost`].
    ClaimLost,
    /// [`Event::TaskDeadLettered`].
    TaskDeadLettered,
    /// [`Event::Extended`].
    Extended,
    /// [`Event::ExtendVoid`].
    ExtendVoid,
    /// [`Event::DoneAccepted`].
    DoneAccepted,
    /// [`Event::DoneRepeated`].
    DoneRepeated,
    /// [`Event::DoneFenced`].
    DoneFenced,
    /// [`Event::Released`].
    Released,
    /// [`Event::ReleaseVoid`].
    ReleaseVoid,
    /// [`Event::Heartbeat`].
    Heartbeat,
}

impl VerdictKind {
    /// The class of an event.
    pub fn of(event: &Event) -> Self {
        match event {
            Event::ClaimWon { .. } => Self::ClaimWon,
            Event::ClaimLost { .. } => Self::ClaimLost,
            Event::TaskDeadLettered { .. } => Self::TaskDeadLettered,
            Event::Extended { .. } => Self::Extended,
            Event::ExtendVoid { .. } => Self::ExtendVoid,
            Event::DoneAccepted { .. } => Self::DoneAccepted,
            Event::DoneRepeated { .. } => Self::DoneRepeated,
            Event::DoneFenced { .. } => Self::DoneFenced,
            Event::Released { .. } => Self::Released,
            Event::ReleaseVoid { .. } => Self::ReleaseVoid,
            Event::Heartbeat { .. } => Self::Heartbeat,
        }
    }
}

/// One broken promise. Offsets are in the `claims` partition unless a [`LogName`] says otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Violation {
    /// A record that does not decode (corruption, a bug, or a format this reader does not know).
    UndecodableRecord {
        /// The partition.
        log: LogName,
        /// The record's offset.
        offset: i64,
        /// The decode error, as text.
        error: String,
    },
    /// A record whose offset is negative or not after its predecessor's; it was skipped.
    OffsetOrder {
        /// Why it was refused.
        error: ApplyError,
    },
    /// A claim for a task that never appears in the `tasks` log (workers only claim tasks they
    /// have read, so this is a worker bug — or retention removed the task record).
    ClaimForUnknownTask {
        /// The claim's offset.
        offset: i64,
        /// The task it names.
        task_id: Uuid,
    },
    /// The state machine's verdict differs from the verifier's independent reference model.
    VerdictDisagreement {
        /// The record's offset.
        offset: i64,
        /// The task.
        task_id: Uuid,
        /// What the reference model decided.
        expected: VerdictKind,
        /// What the state machine reported.
        found: Event,
    },
    /// An event that cannot describe its record (wrong record kind, task, worker, token or
    /// expiry). The step is not checked further.
    EventDoesNotMatchRecord {
        /// The record's offset.
        offset: i64,
        /// The record's task.
        task_id: Uuid,
        /// What does not match.
        detail: String,
    },
    /// A winning claim whose token is not its own offset.
    TokenIsNotClaimOffset {
        /// The claim's offset.
        offset: i64,
        /// The task.
        task_id: Uuid,
        /// The token reported.
        token: i64,
    },
    /// A claim won (or dead-lettered the task) while the previous lease was still live at the
    /// claim's timestamp: two holders at once.
    LeaseOverlap {
        /// The claim's offset.
        offset: i64,
        /// The task.
        task_id: Uuid,
        /// The claim's timestamp.
        claimed_at_ms: u64,
        /// The lease it displaced.
        previous_token: i64,
        /// That lease's expiry.
        previous_expires_at_ms: u64,
    },
    /// A claim won or an extend renewed a lease longer than the queue's `max_lease_ms`: one
    /// writer could park the task for as long as it asked.
    LeaseTooLong {
        /// The record's offset.
        offset: i64,
        /// The task.
        task_id: Uuid,
        /// The lease the record asked for.
        lease_ms: u64,
        /// The queue's maximum.
        max_lease_ms: u64,
    },
    /// A release was applied that did not carry the current lease's token and holder: a task
    /// freed by someone who did not hold it.
    ReleaseWithoutCurrentToken {
        /// The release's offset.
        offset: i64,
        /// The task.
        task_id: Uuid,
        /// The token it carried.
        token: i64,
        /// The token that was current, if any.
        current_token: Option<i64>,
    },
    /// A second done was accepted for a task: its effect was committed twice.
    CompletedTwice {
        /// The second accepted done's offset.
        offset: i64,
        /// The task.
        task_id: Uuid,
        /// Token of the first accepted done.
        first_token: i64,
        /// Token of the second.
        second_token: i64,
    },
    /// A done was accepted without carrying the token of the last claim that won before it (or
    /// from a worker other than that claim's).
    DoneWithoutCurrentToken {
        /// The done's offset.
        offset: i64,
        /// The task.
        task_id: Uuid,
        /// The token the done carried.
        token: i64,
        /// The token of the last winning claim before it, if any.
        current_token: Option<i64>,
    },
    /// A claim won, a lease was extended, or the task was dead-lettered after the task had
    /// finished (done or dead-lettered).
    ActivityAfterFinish {
        /// The record's offset.
        offset: i64,
        /// The task.
        task_id: Uuid,
        /// The offending event.
        event: Event,
    },
    /// A task won more claims than `max_expired_leases` allows, or was dead-lettered before
    /// reaching it.
    AttemptLimitBroken {
        /// The record's offset.
        offset: i64,
        /// The task.
        task_id: Uuid,
        /// Expired leases this claim makes (winning claims before it, when no lease was
        /// released: a release frees a task without counting an attempt against the limit).
        wins: u32,
        /// The configured `max_expired_leases`.
        max_expired_leases: u32,
    },
    /// A task that is neither done, dead-lettered nor under a live lease, and has been idle for
    /// at least `lost_after_ms` (see [`VerifyConfig`](super::VerifyConfig)).
    TaskLost {
        /// The task.
        task_id: Uuid,
        /// Since when nobody has held it: its submission, or the expiry of its last lease.
        idle_since_ms: u64,
    },
    /// The state machine's running counters disagree with the verifier's count over the trace.
    CounterMismatch {
        /// Which counter.
        counter: String,
        /// [`Counters`](crate::queue::state::Counters) value.
        state_machine: u64,
        /// The verifier's count.
        trace: u64,
    },
}
