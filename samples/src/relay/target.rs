//! What the relay needs of the side it writes: learn where to resume after a restart, and
//! write a batch. One adapter per kind of target, because *how* a target remembers what was
//! relayed differs: JetStream records carry headers (the source position rides along), booblik
//! records do not (an intent file stands in; see [`super::intent`]).

use async_trait::async_trait;

use crate::engine::LogRecord;

/// What a restarting relay learned from the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recovery {
    /// The source offset to read next (at or after the position the offset store saved).
    pub resume_at: i64,
    /// Records the target may now hold twice because of the crash before this start.
    pub duplicates: u64,
    /// Duplicates counted on this partition by every start so far, this one included, where
    /// the target keeps such a total durably (booblik's intent); otherwise `duplicates`.
    pub duplicates_total: u64,
}

/// One partition of a target.
#[async_trait]
pub trait TargetPartition: Send + Sync + std::fmt::Debug {
    /// Called once at start with the source position the offset store saved (or the source's
    /// start): where to resume, and what the last crash may have duplicated.
    async fn recover(&self, saved: i64) -> anyhow::Result<Recovery>;

    /// Writes `records` (consecutive source offsets, never empty) and returns once the target
    /// acknowledged them, with how many the target itself reported as duplicates.
    async fn write(&self, records: &[LogRecord]) -> anyhow::Result<u64>;
}
