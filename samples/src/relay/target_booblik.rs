//! Writing into booblik: plain appends, guarded by an intent ([`super::intent`]).

use std::path::PathBuf;
use std::sync::Arc;

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
}

impl BooblikTarget {
    /// Writes into `log`, keeping its intent at `intent_path`.
    pub fn new(log: Arc<dyn PartitionLog>, intent_path: PathBuf) -> Self {
        Self { log, intent_path }
    }
}

#[async_trait]
impl TargetPartition for BooblikTarget {
    async fn recover(&self, saved: i64) -> anyhow::Result<Recovery> {
        let Some(last) = intent::load(&self.intent_path).await? else {
            return Ok(Recovery {
                resume_at: saved,
                duplicates: 0,
            });
        };
        let end = self.log.bounds().await?.end;
        let duplicates = last.possible_duplicates(saved, end);
        if duplicates > 0 {
            tracing::warn!(
                partition = self.log.name().partition,
                duplicates,
                intent_from = last.from,
                intent_records = last.records,
                target_end_before = last.target_end,
                target_end_now = end,
                "the last write landed but its position was not saved: these records are written again"
            );
        }
        // Count each landed batch once: a crash before the next write must not find the same
        // growth again. The re-based intent says "nothing of this batch is in the target since
        // `end`", which is what the coming rewrite starts from.
        intent::save(
            &self.intent_path,
            &Intent {
                target_end: end,
                ..last
            },
        )
        .await?;
        Ok(Recovery {
            resume_at: saved,
            duplicates: duplicates as u64,
        })
    }

    async fn write(&self, records: &[LogRecord]) -> anyhow::Result<u64> {
        let first = records.first().expect("a batch is never empty").offset;
        let target_end = self.log.bounds().await?.end;
        let announced = Intent {
            from: first,
            records: records.len() as i64,
            target_end,
        };
        intent::save(&self.intent_path, &announced).await?;
        let payloads: Vec<Bytes> = records.iter().map(|r| r.payload.clone()).collect();
        // FORCED: the position is saved right after this returns, so the records must survive
        // a broker crash from then on, or a saved position would point past lost records.
        self.log.append(&payloads, Ack::Forced).await?;
        Ok(0)
    }
}
