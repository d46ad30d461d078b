//! [`WorkerEvent`]: what a worker did, as it happens, for whoever watches it (the load harness,
//! tests). Logs say the same for people; events are for programs.

use std::time::Duration;

use uuid::Uuid;

/// One step of a worker's life, in the order it happens.
///
/// For one task a worker that wins goes `ClaimAppended` → `VerdictKnown { won: true }` →
/// `WorkStarted` → (`LeaseLost` | `DoneAppended`); one that loses stops after `VerdictKnown`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerEvent {
    /// The claim append was acknowledged at `offset` (its fencing token, should it win).
    ClaimAppended {
        /// The task asked for.
        task_id: Uuid,
        /// Offset of the claim in the claims partition.
        offset: i64,
    },
    /// The worker's own claims follower applied the claim: the verdict is known.
    VerdictKnown {
        /// The task asked for.
        task_id: Uuid,
        /// Offset of the claim.
        offset: i64,
        /// Whether the worker holds the lease now.
        won: bool,
        /// From issuing the append to knowing the verdict: both the acknowledgement and the
        /// follower's application of the claim must have happened (the claim round trip).
        claim_latency: Duration,
    },
    /// Work began under the lease identified by `token`.
    WorkStarted {
        /// The task.
        task_id: Uuid,
        /// The lease's fencing token (the winning claim's offset).
        token: i64,
    },
    /// The lease is gone — an extend was void, no renewal was confirmed before the worker's
    /// local lease deadline, or the done was fenced — and the work was abandoned or its result
    /// refused.
    LeaseLost {
        /// The task.
        task_id: Uuid,
        /// The token that is no longer current.
        token: i64,
    },
    /// The done append was acknowledged at `offset` (whether it is accepted is the verdict on
    /// that offset; [`WorkerStats::completed`](super::WorkerStats::completed) counts acceptances).
    DoneAppended {
        /// The task.
        task_id: Uuid,
        /// The token the done carries.
        token: i64,
        /// Offset of the done in the claims partition.
        offset: i64,
    },
}
