//! The one knob of the verdict: how many expired leases a task survives.

use std::num::NonZeroU32;

use serde::{Deserialize, Serialize};

/// Default for [`QueueConfig::max_expired_leases`]: three attempts, then the dead-letter state.
pub const DEFAULT_MAX_EXPIRED_LEASES: NonZeroU32 = NonZeroU32::new(3).unwrap();

/// Parameters of the verdict. Every reader of the claims log must use the same values, or their
/// verdicts diverge; treat it as part of the queue's definition, not as a per-worker tunable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueConfig {
    /// A task is dead-lettered once this many of its leases have expired (been superseded by a
    /// later claim without a `done`). Precisely: with `N` here, a task gets at most `N` winning
    /// claims; the claim that would have been the `N + 1`-th win dead-letters the task instead.
    /// Zero would mean "dead before the first attempt", hence `NonZeroU32`.
    pub max_expired_leases: NonZeroU32,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            max_expired_leases: DEFAULT_MAX_EXPIRED_LEASES,
        }
    }
}
