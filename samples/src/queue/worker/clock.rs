//! The worker's own wall clock, in the unit the records use.
//!
//! Timestamps in claims, extends and dones are written from this clock; no reader ever judges a
//! record by its own clock (see "Clocks" in `docs/task-queue.md`). A worker consults it only to
//! propose candidates ([`QueueState::pick`](crate::queue::state::QueueState::pick)) and
//! to stamp what it writes.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (0 if the system clock is set before 1970).
pub fn wall_clock_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64)
}
