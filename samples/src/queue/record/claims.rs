//! The records on the `claims` topic: claim, extend, done, release, heartbeat.
//!
//! Every record carries the writer's own wall-clock timestamp and, where a lease is involved, the
//! lease length. The verdict (see [`crate::queue::state`]) is computed from these fields and the
//! order of the log alone, so every reader reaches the same verdict without consulting a clock.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::DecodeError;

/// "I want this task": asks for a lease of `lease_ms` starting at `claimed_at_ms`.
///
/// If the claim wins, its own offset in the `claims` partition becomes the lease's fencing
/// token. The token is not in the record because the writer cannot know the offset before the
/// append returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    /// The task asked for.
    pub task_id: Uuid,
    /// The claiming worker.
    pub worker_id: Uuid,
    /// Claimer's wall clock when it wrote the claim, in ms since the Unix epoch.
    pub claimed_at_ms: u64,
    /// Lease length asked for; the lease would expire at `claimed_at_ms + lease_ms`.
    pub lease_ms: u64,
}

/// "I still hold this lease": renews the lease identified by `token`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extend {
    /// The task whose lease is renewed.
    pub task_id: Uuid,
    /// The holder writing the extend.
    pub worker_id: Uuid,
    /// Fencing token of the lease being renewed (the offset of the winning claim).
    pub token: i64,
    /// Holder's wall clock when it wrote the extend, in ms since the Unix epoch.
    pub extended_at_ms: u64,
    /// New lease length; if valid, the lease expires at `extended_at_ms + lease_ms`.
    pub lease_ms: u64,
}

/// "I finished this task": commits `result` under the lease identified by `token`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Done {
    /// The finished task.
    pub task_id: Uuid,
    /// The holder writing the done.
    pub worker_id: Uuid,
    /// Fencing token of the lease under which the work was done.
    pub token: i64,
    /// Holder's wall clock when it wrote the done, in ms since the Unix epoch (informational:
    /// acceptance does not depend on it, see the verdict rules).
    pub done_at_ms: u64,
    /// Opaque output of the work; it counts only if the done is accepted.
    pub result: Vec<u8>,
}

/// "I stop holding this lease": a holder that stops cleanly (shutdown) hands the task back.
///
/// Valid only from the current holder with its token, before the lease expired; it frees the
/// task at once, and the next claim wins without counting an expired lease. Written only at
/// [`ProtocolLevel::V2`](super::ProtocolLevel) and above (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Release {
    /// The task handed back.
    pub task_id: Uuid,
    /// The holder writing the release.
    pub worker_id: Uuid,
    /// Fencing token of the lease being released.
    pub token: i64,
    /// Holder's wall clock when it wrote the release, in ms since the Unix epoch.
    pub released_at_ms: u64,
}

/// "I am here": an idle worker's sign of life, so that others count it among the live workers
/// (which [`Pick::Rendezvous`](crate::queue::pick::Pick) ranks tasks over). About no task.
///
/// A worker is live while its last record of any kind is younger than the lease it last wrote:
/// a heartbeat says `lease_ms` explicitly, so every reader judges liveness alike without a
/// clock of its own. A heartbeat with `lease_ms = 0`, written at a clean shutdown, says "gone".
/// Written only at [`ProtocolLevel::V2`](super::ProtocolLevel) and above.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Heartbeat {
    /// The worker.
    pub worker_id: Uuid,
    /// Its wall clock when it wrote the heartbeat, in ms since the Unix epoch.
    pub at_ms: u64,
    /// How long after `at_ms` it counts as live without another record.
    pub lease_ms: u64,
}

/// One record of the `claims` partition.
///
/// The encoding is `[FORMAT_VERSION][postcard enum]`; postcard writes the variant index as a
/// varint, so the order of the variants below is part of format version 1: `Claim` = 0,
/// `Extend` = 1, `Done` = 2, `Release` = 3, `Heartbeat` = 4 (the last two: protocol level 2). Append new variants at the end
/// only, and write a new one only once every reader knows it (the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClaimsRecord {
    /// Variant 0.
    Claim(Claim),
    /// Variant 1.
    Extend(Extend),
    /// Variant 2.
    Done(Done),
    /// Variant 3: written from [`ProtocolLevel::V2`](super::ProtocolLevel) on.
    Release(Release),
    /// Variant 4: written from [`ProtocolLevel::V2`](super::ProtocolLevel) on.
    Heartbeat(Heartbeat),
}

impl ClaimsRecord {
    /// The task this record is about; `None` for a heartbeat, which is about its writer.
    pub fn task_id(&self) -> Option<Uuid> {
        match self {
            Self::Claim(claim) => Some(claim.task_id),
            Self::Extend(extend) => Some(extend.task_id),
            Self::Done(done) => Some(done.task_id),
            Self::Release(release) => Some(release.task_id),
            Self::Heartbeat(_) => None,
        }
    }

    /// The writer's timestamp, whatever the kind.
    pub fn written_at_ms(&self) -> u64 {
        match self {
            Self::Claim(claim) => claim.claimed_at_ms,
            Self::Extend(extend) => extend.extended_at_ms,
            Self::Done(done) => done.done_at_ms,
            Self::Release(release) => release.released_at_ms,
            Self::Heartbeat(heartbeat) => heartbeat.at_ms,
        }
    }

    /// The lease length the record states, if its kind carries one.
    pub fn lease_ms(&self) -> Option<u64> {
        match self {
            Self::Claim(claim) => Some(claim.lease_ms),
            Self::Extend(extend) => Some(extend.lease_ms),
            Self::Heartbeat(heartbeat) => Some(heartbeat.lease_ms),
            Self::Done(_) | Self::Release(_) => None,
        }
    }

    /// The worker that wrote this record.
    pub fn worker_id(&self) -> Uuid {
        match self {
            Self::Claim(claim) => claim.worker_id,
            Self::Extend(extend) => extend.worker_id,
            Self::Done(done) => done.worker_id,
            Self::Release(release) => release.worker_id,
            Self::Heartbeat(heartbeat) => heartbeat.worker_id,
        }
    }

    /// Encodes the record as `[FORMAT_VERSION][postcard body]`.
    pub fn encode(&self) -> Vec<u8> {
        let mut buf = Vec::new();
        self.encode_into(&mut buf);
        buf
    }

    /// Appends the encoding of the record to `buf` (reuses the caller's allocation).
    pub fn encode_into(&self, buf: &mut Vec<u8>) {
        super::encode_into(self, buf);
    }

    /// Decodes one claims record; never panics, whatever the bytes.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        super::decode(bytes)
    }
}

impl From<Claim> for ClaimsRecord {
    fn from(claim: Claim) -> Self {
        Self::Claim(claim)
    }
}

impl From<Extend> for ClaimsRecord {
    fn from(extend: Extend) -> Self {
        Self::Extend(extend)
    }
}

impl From<Heartbeat> for ClaimsRecord {
    fn from(heartbeat: Heartbeat) -> Self {
        Self::Heartbeat(heartbeat)
    }
}

impl From<Release> for ClaimsRecord {
    fn from(release: Release) -> Self {
        Self::Release(release)
    }
}

impl From<Done> for ClaimsRecord {
    fn from(done: Done) -> Self {
        Self::Done(done)
    }
}
