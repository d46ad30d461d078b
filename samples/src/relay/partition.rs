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
                // Nothing to write, but the read may still have moved on (past a gap, or from
                // below the origin to the first offset): save that, or the position stays stuck
                // behind it and every restart reads the same empty stretch again.
                if batch.next_offset > position {
                    self.store
                        .save(
                            &self.consumer,
                            &name.topic,
                            name.partition,
                            batch.next_offset,
                        )
                        .await?;
                    position = batch.next_offset;
                    c.position.store(position, Ordering::Relaxed);
                }
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use async_trait::async_trait;
    use bytes::Bytes;

    use super::*;
    use crate::engine::{Ack, Appended, Bounds, LogRecord, PartitionName, ReadBatch};
    use crate::relay::target::Recovery;

    /// A source whose offsets 0..5 are a gap: a read there returns no record but moves on to
    /// 5, where records 5..8 are.
    #[derive(Debug)]
    struct Gapped(PartitionName);

    #[async_trait]
    impl PartitionLog for Gapped {
        fn name(&self) -> &PartitionName {
            &self.0
        }
        async fn append(&self, _: &[Bytes], _: Ack) -> Result<Appended, EngineError> {
            unreachable!("the relay never appends to its source")
        }
        async fn read(&self, from: i64, _: ReadLimits) -> Result<ReadBatch, EngineError> {
            let records = if from < 5 {
                Vec::new()
            } else {
                (from..8)
                    .map(|offset| LogRecord {
                        offset,
                        payload: Bytes::from(offset.to_string()),
                    })
                    .collect()
            };
            Ok(ReadBatch {
                records,
                next_offset: if from < 5 { 5 } else { 8 },
                end: 8,
            })
        }
        async fn bounds(&self) -> Result<Bounds, EngineError> {
            Ok(Bounds {
                origin: 0,
                start: 0,
                end: 8,
            })
        }
        fn reconnects(&self) -> u64 {
            0
        }
    }

    #[derive(Debug, Default)]
    struct Collect(Mutex<Vec<i64>>);

    #[async_trait]
    impl TargetPartition for Collect {
        async fn recover(&self, saved: i64) -> anyhow::Result<Recovery> {
            Ok(Recovery {
                resume_at: saved,
                duplicates: 0,
                duplicates_total: 0,
            })
        }
        async fn write(&self, records: &[LogRecord]) -> anyhow::Result<u64> {
            let mut got = self.0.lock().unwrap();
            got.extend(records.iter().map(|r| r.offset));
            Ok(0)
        }
    }

    #[tokio::test]
    async fn an_empty_read_that_moves_on_saves_the_position_it_moved_to() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(FileOffsetStore::open(dir.path()).await.unwrap());
        let relay = PartitionRelay {
            source: Arc::new(Gapped(PartitionName {
                topic: "events".into(),
                partition: 0,
            })),
            target: Box::<Collect>::default(),
            store: store.clone(),
            consumer: "relay".into(),
            limits: ReadLimits {
                wait: Duration::ZERO,
                ..ReadLimits::default()
            },
            exit_when_caught_up: true,
            counters: Arc::default(),
        };
        let counters = relay.counters.clone();
        // Without the save the loop reads the empty stretch at 0 forever: a timeout, not a hang.
        tokio::time::timeout(Duration::from_secs(10), relay.run(Shutdown::new()))
            .await
            .expect("the relay moved past the gap")
            .unwrap();
        assert_eq!(store.load("relay", "events", 0).await.unwrap(), Some(8));
        assert_eq!(counters.relayed.load(Ordering::Relaxed), 3);
    }
}
