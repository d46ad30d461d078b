//! The wall clock, in the unit the records use: milliseconds since the Unix epoch.
//!
//! One function for every sample, so that events (`at_ms`) and the task queue's claims, extends
//! and dones are stamped alike. In the task queue no reader ever judges a record by its own clock
//! (see "Clocks" in `docs/task-queue.md`): a worker consults it only to propose candidates
//! ([`QueueState::pick`](crate::queue::state::QueueState::pick)) and to stamp what it writes.
//! Durations within one process use [`std::time::Instant`] instead, which never steps back.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (0 if the system clock is set before 1970).
pub fn wall_clock_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64)
}
