//! The record on the `tasks` topic: one unit of work.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::DecodeError;

/// A unit of work, appended to the `tasks` partition by whoever submits work.
///
/// The task's identity is `task_id`, not its offset: claims refer to tasks by id, so a claim can
/// be judged without knowing where (or whether) the reader has seen the task record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// Identity of the task; claims, extends and dones name it.
    pub task_id: Uuid,
    /// Opaque input for the worker.
    pub payload: Vec<u8>,
    /// Submitter's wall clock when the task was written, in milliseconds since the Unix epoch.
    pub submitted_at_ms: u64,
}

impl Task {
    /// Encodes the task as `[FORMAT_VERSION][postcard body]`.
    pub fn encode(&self) -> Vec<u8> {
        let mut buf = Vec::new();
        self.encode_into(&mut buf);
        buf
    }

    /// Appends the encoding of the task to `buf` (reuses the caller's allocation).
    pub fn encode_into(&self, buf: &mut Vec<u8>) {
        super::encode_into(self, buf);
    }

    /// Decodes one task record; never panics, whatever the bytes.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        super::decode(bytes)
    }
}
