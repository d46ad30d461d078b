//! The knobs of the verdict: how many expired leases a task survives, and how long a lease may
//! be asked for.

use std::num::NonZeroU32;

use serde::{Deserialize, Serialize};

/// Default for [`QueueConfig::max_expired_leases`]: three attempts, then the dead-letter state.
pub const DEFAULT_MAX_EXPIRED_LEASES: NonZeroU32 = NonZeroU32::new(3).unwrap();

/// Default for [`QueueConfig::max_lease_ms`]: one day.
pub const DEFAULT_MAX_LEASE_MS: u64 = 24 * 60 * 60 * 1000;

/// Parameters of the verdict. Every reader of the claims log must use the same values, or their
/// verdicts diverge; treat it as part of the queue's definition, not as a per-worker tunable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueConfig {
    /// A task is dead-lettered once this many of its leases have expired (been superseded by a
    /// later claim without a `done`). Precisely: with `N` here, a task gets at most `N` winning
    /// claims; the claim that would have been the `N + 1`-th win dead-letters the task instead.
    /// Zero would mean "dead before the first attempt", hence `NonZeroU32`.
    pub max_expired_leases: NonZeroU32,
    /// The longest lease a claim or an extend may ask for. A claim or an extend whose `lease_ms`
    /// is above it is void for every reader ([`ClaimLostReason::LeaseTooLong`],
    /// [`Rejection::LeaseTooLong`]): without a bound in the verdict itself, one buggy or hostile
    /// writer could park a task for ever with a single record. Missing from a serialized config
    /// written before it existed, it takes the default.
    ///
    /// [`ClaimLostReason::LeaseTooLong`]: super::ClaimLostReason::LeaseTooLong
    /// [`Rejection::LeaseTooLong`]: super::Rejection::LeaseTooLong
    #[serde(default = "default_max_lease_ms")]
    pub max_lease_ms: u64,
}

fn default_max_lease_ms() -> u64 {
    DEFAULT_MAX_LEASE_MS
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            max_expired_leases: DEFAULT_MAX_EXPIRED_LEASES,
            max_lease_ms: DEFAULT_MAX_LEASE_MS,
        }
    }
}
