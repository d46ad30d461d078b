//! One partition's relay loop: the whole lesson in a dozen lines.
//!
//! ```text
//!   position = offset store, or the source's start          (where *we* were)
//!   resume   = target.recover(position)                      (what the *target* knows)
//!   loop:
//!     batch = source.read(resume)
//!     target.write(batch)          ── acknowledged ──▶  save position = batch.next_offset
//! ```
//!
//! The save comes after the target's acknowledgement, so a crash between the two re-sends the
//! batch (at-least-once) and never skips it. What the re-send does to the target is the
//! target's business: JetStream drops it (headers), booblik counts it (intent).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use anyhow::Context;
use booblik_offset_store::{FileOffsetStore, OffsetStore};

use super::summary::PartitionCounters;
use super::target::TargetPartition;
use crate::engine::{EngineError, PartitionLog, ReadLimits};
use crate::support::retry;
use crate::support::shutdown::Shutdown;

/// What one partition task needs.
#[derive(Debug)]
pub struct PartitionRelay {
    /// The source partition.
    pub source: Arc<dyn PartitionLog>,
    /// The target partition (same number).
    pub target: Box<dyn TargetPartition>,
    /// Where the source position lives.
    pub store: Arc<FileOffsetStore>,
    /// The offset store's consumer name.
    pub consumer: String,
    /// Read limits (the batch size bounds the duplicates of one crash).
    pub limits: ReadLimits,
    /// Stop at the source end seen at start.
    pub exit_when_caught_up: bool,
    /// This partition's counters.
    pub counters: Arc<PartitionCounters>,
}

impl PartitionRelay {
    /// Relays until stopped (or caught up, with `exit_when_caught_up`).
    pub async fn run(self, shutdown: Shutdown) -> anyhow::Result<()> {
        let name = self.source.name().clone();
        let bounds = self.source.bounds().await?;
        let saved = self
            .store
            .load(&self.consumer, &name.topic, name.partition)
            .await?;
        // Never saved: start at the first record the source still holds.
        let saved = saved.unwrap_or(bounds.start);
        let recovery = self
            .target
            .recover(saved)
            .await
            .with_context(|| format!("{name}: cannot recover from the target"))?;
        let c = &self.counters;
        c.duplicates
            .fetch_add(recovery.duplicates, Ordering::Relaxed);
        c.duplicates_before.store(
            recovery.duplicates_total - recovery.duplicates,
            Ordering::Relaxed,
        );
        c.started_at.store(recovery.resume_at, Ordering::Relaxed);
        c.position.store(recovery.resume_at, Ordering::Relaxed);
        c.end_at_start.store(bounds.end, Ordering::Relaxed);
        tracing::info!(
            partition = name.partition,
            saved,
            resume_at = recovery.resume_at,
            duplicates = recovery.duplicates,
            end_at_start = bounds.end,
            "relaying"
        );
        let mut position = recovery.resume_at;
        loop {
            if shutdown.is_triggered() || (self.exit_when_caught_up && position >= bounds.end) {
                return Ok(());
            }
            let read = tokio::select! {
                read = self.source.read(position, self.limits) => read,
                () = shutdown.triggered() => return Ok(()),
            };
            let batch = match read {
                Ok(batch) => batch,
                Err(error @ EngineError::Unavailable { .. }) => {
                    tracing::warn!(%error, "source unavailable; retrying");
                    if !retry::backoff(&shutdown).await {
                        return Ok(());
                    }
                    continue;
                }
                Err(error) => return Err(error).with_context(|| format!("{name}: cannot read")),
            };
            let Some(first) = batch.records.first() else {
                continue;
            };
            let first = first.offset;
            // Not raced against the stop signal: a batch in hand is written *and* saved.
            let duplicates =
                self.target.write(&batch.records).await.with_context(|| {
                    format!("{name}: cannot write {first}..{}", batch.next_offset)
                })?;
            self.store
                .save(
                    &self.consumer,
                    &name.topic,
                    name.partition,
                    batch.next_offset,
                )
                .await?;
            position = batch.next_offset;
            c.relayed
                .fetch_add(batch.records.len() as u64, Ordering::Relaxed);
            c.duplicates.fetch_add(duplicates, Ordering::Relaxed);
            c.position.store(position, Ordering::Relaxed);
            tracing::debug!(
                partition = name.partition,
                first_offset = first,
                next_offset = position,
                "relayed batch"
            );
        }
    }
}
