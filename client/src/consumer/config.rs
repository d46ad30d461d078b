//! [`ConsumerConfig`] and [`StartPosition`].

use booblik_protocol::RECORD_HEADER_BYTES;

use crate::connection::MAX_FETCH_BYTES;
use crate::error::ClientError;

/// Default [`ConsumerConfig::max_bytes`].
pub const DEFAULT_MAX_BYTES: i32 = 1024 * 1024;
/// Default [`ConsumerConfig::max_wait_ms`].
pub const DEFAULT_MAX_WAIT_MS: i32 = 500;
/// Default [`ConsumerConfig::min_bytes`].
pub const DEFAULT_MIN_BYTES: i32 = 1;
/// The broker clamps a long poll to this ([`booblik_protocol::MAX_FETCH_WAIT_MS`]), so a longer
/// wait is pointless.
pub const MAX_WAIT_MS_LIMIT: i32 = booblik_protocol::MAX_FETCH_WAIT_MS;
/// Shortest time between the starts of two long polls that both came back empty, when
/// `max_wait_ms` is longer: `follow()` pauses for the rest of it after an early empty answer.
/// A broker that honours the wait never triggers it; one that answers at once (ignoring
/// `maxWaitMillis`, or while shutting down) gets at most 10 FETCHes a second instead of a hot
/// loop.
pub const MIN_EMPTY_POLL_INTERVAL_MS: u64 = 100;
/// Smallest `max_bytes`: a record header and one payload byte.
pub const MIN_MAX_BYTES: i32 = RECORD_HEADER_BYTES as i32 + 1;

/// Where a consumer starts reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartPosition {
    /// The first record still in the log (`logStartOffset` from METADATA).
    Earliest,
    /// The next record to be written (`highWatermark` from METADATA): only new records.
    Latest,
    /// This offset.
    At(i64),
}

/// How a consumer fetches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerConfig {
    /// Upper bound on one FETCH's payload. A record larger than `max_bytes - 8` cannot be read
    /// and fails with [`ClientError::RecordExceedsMaxBytes`]. In
    /// [`MIN_MAX_BYTES`]`..=`[`MAX_FETCH_BYTES`].
    pub max_bytes: i32,
    /// How long a `follow()` FETCH v2 may wait at the broker for new records. In
    /// `1..=`[`MAX_WAIT_MS_LIMIT`]: zero would turn `follow()` into busy polling.
    pub max_wait_ms: i32,
    /// Bytes past the position a long poll waits for. In `1..=max_bytes`.
    pub min_bytes: i32,
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        Self {
            max_bytes: DEFAULT_MAX_BYTES,
            max_wait_ms: DEFAULT_MAX_WAIT_MS,
            min_bytes: DEFAULT_MIN_BYTES,
        }
    }
}

impl ConsumerConfig {
    /// Checks that every value is in range.
    pub fn validate(&self) -> Result<(), ClientError> {
        let invalid = |message: String| Err(ClientError::InvalidConfig(message));
        if !(MIN_MAX_BYTES..=MAX_FETCH_BYTES).contains(&self.max_bytes) {
            return invalid(format!(
                "ConsumerConfig::max_bytes must be in {MIN_MAX_BYTES}..={MAX_FETCH_BYTES}"
            ));
        }
        if !(1..=MAX_WAIT_MS_LIMIT).contains(&self.max_wait_ms) {
            return invalid(format!(
                "ConsumerConfig::max_wait_ms must be in 1..={MAX_WAIT_MS_LIMIT}"
            ));
        }
        if !(1..=self.max_bytes).contains(&self.min_bytes) {
            return invalid("ConsumerConfig::min_bytes must be in 1..=max_bytes".into());
        }
        Ok(())
    }
}
