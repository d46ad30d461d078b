//! Writing into booblik: plain appends, guarded by an intent ([`super::intent`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use bytes::Bytes;

use super::intent::{self, Intent};
use super::target::{Recovery, TargetPartition};
use crate::engine::{Ack, LogRecord, PartitionLog};

/// A booblik partition written by the relay.
#[derive(Debug)]
pub struct BooblikTarget {
    log: Arc<dyn PartitionLog>,
    intent_path: PathBuf,
    /// The durable total of duplicates, carried from intent to intent.
    duplicates_counted: AtomicU64,
}

impl BooblikTarget {
    /// Writes into `log`, keeping its intent at `intent_path`.
    pub fn new(log: Arc<dyn PartitionLog>, intent_path: PathBuf) -> Self {
        Self {
            log,
            intent_path,
            duplicates_counted: AtomicU64::new(0),
        }
    }
}

#[async_trait]
impl TargetPartition for BooblikTarget {
    async fn recover(&self, saved: i64) -> anyhow::Result<Recovery> {
        let Some(last) = intent::load(&self.intent_path).await? else {
            return Ok(Recovery {
                resume_at: saved,
                duplicates: 0,
                duplicates_total: 0,
            });
        };
        let end = self.log.bounds().await?.end;
        let duplicates = last.possible_duplicates(saved, end) as u64;
        let total = last.duplicates_counted + duplicates;
        // Count each landed batch once: the re-based intent says "nothing of this batch is in
        // the target since `end`", which is what the coming rewrite starts from, and it holds
        // the new total in the same durable replace (see `intent`: neither doubled nor lost).
        intent::save(
            &self.intent_path,
            &Intent {
                target_end: end,
                duplicates_counted: total,
                ..last
            },
        )
        .await?;
        self.duplicates_counted.store(total, Ordering::Relaxed);
        if duplicates > 0 {
            tracing::warn!(
                partition = self.log.name().partition,
                duplicates,
                duplicates_total = total,
                intent_from = last.from,
                intent_records = last.records,
                target_end_before = last.target_end,
                target_end_now = end,
                "the last write landed but its position was not saved: these records are written again"
            );
        }
        Ok(Recovery {
            resume_at: saved,
            duplicates,
            duplicates_total: total,
        })
    }

    async fn write(&self, records: &[LogRecord]) -> anyhow::Result<u64> {
        let first = records.first().expect("a batch is never empty").offset;
        let target_end = self.log.bounds().await?.end;
        let announced = Intent {
            from: first,
            records: records.len() as i64,
            target_end,
            duplicates_counted: self.duplicates_counted.load(Ordering::Relaxed),
        };
        intent::save(&self.intent_path, &announced).await?;
        let payloads: Vec<Bytes> = records.iter().map(|r| r.payload.clone()).collect();
        // FORCED: the position is saved right after this returns, so the records must survive
        // a broker crash from then on, or a saved position would point past lost records.
        self.log.append(&payloads, Ack::Forced).await?;
        Ok(0)
    }
}
