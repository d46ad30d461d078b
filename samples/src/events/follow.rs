//! The follow consumer: follows partitions as records arrive, saves its position after each
//! handled batch, and on restart resumes from the saved position.
//!
//! ```text
//!  start:  load(consumer, topic, partition) ──► At(saved) | Earliest when nothing was saved
//!  loop:   log.read(position, limits)  (a long poll: waits at the engine, no busy loop)
//!          handle(batch)               (here: tally and check per-user order)
//!          save(batch.next_offset)
//! ```
//!
//! The consumer runs on any engine ([`LogEngine`]): booblik or JetStream. Positions are the
//! engine's offsets (booblik's from 0, JetStream's stream sequences from 1) and stay in the
//! consumer's own [`OffsetStore`] on both — JetStream's durable consumers are not used, so the
//! position is the application's, saved where and when it decides.
//!
//! # Why the checkpoint comes after handling
//!
//! The order of the last two steps is the delivery guarantee. Handling first and saving second
//! gives **at-least-once**: a crash between the two leaves the old position saved, so the restart
//! reads that batch again and handles it a second time — a duplicate, never a loss. Saving first
//! would give at-most-once: a crash after the save loses the batch silently. Duplicates can be
//! detected (the [`tally`](crate::events::tally) counts them by offset) and made harmless with an
//! idempotent handler; a lost record cannot be found again.
//!
//! A restarted consumer is therefore at most one batch behind where it was: `resumed_from` (in the
//! stats) is the saved position, at or below the last `next_offset` it reported before the crash.
//!
//! The limit of "never a loss" (booblik): the broker serves records up to its high watermark, which includes
//! records written but not yet fsynced. If the broker's *machine* crashes (a process crash keeps
//! them: they are in the page cache), those records can vanish and their offsets be reused by new
//! records; a consumer that read and checkpointed past them resumes after the reused offsets and
//! would skip the new records silently. Publishers using FORCED make their own records durable
//! before the ack, but cannot keep readers from seeing others' unsynced records. This consumer
//! detects it while it runs: whenever its connection was reopened
//! ([`PartitionLog::reconnects`] grew), it re-reads the last record it
//! applied and compares its CRC before handling more ([`recheck`](crate::events::recheck)), and
//! stops with
//! [`FollowError::LogRewritten`] if the log changed under its position. A rewrite while it was not
//! running is not detected (see "The limit" in `samples/README.md`).
//!
//! # Stopping
//!
//! The stop signal is only looked at *between* batches: a batch that was fetched is handled and
//! checkpointed before the loop ends, so a clean stop (Ctrl-C, SIGTERM) repeats nothing on the
//! next start. A read that is still waiting at the engine is simply abandoned — it moved nothing.
//!
//! # Failures
//!
//! A lost connection (broker restart, JetStream leader election) is retried from the same position
//! after a pause; anything else stops the consumer with the error (see
//! [`retry`](crate::support::retry)).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use booblik_offset_store::{OffsetStore, OffsetStoreError};
use serde::Serialize;

use crate::engine::{EngineError, LogEngine, PartitionLog, ReadBatch, ReadLimits, StartAt};
use crate::events::recheck::{Applied, Recheck, recheck_log};
use crate::events::tally::PartitionTally;
use crate::support::per_partition::{partitions_of, run_per_partition};
use crate::support::retry::backoff;
use crate::support::shutdown::Shutdown;

/// Which partitions to follow, and under which name positions are saved.
#[derive(Debug, Clone)]
pub struct FollowConfig {
    /// The topic.
    pub topic: String,
    /// Partitions to follow; `None` follows every partition of the topic.
    pub partitions: Option<Vec<i32>>,
    /// The name positions are saved under in the offset store.
    pub consumer_name: String,
    /// Read limits (batch size, long-poll wait).
    pub limits: ReadLimits,
}

/// Why the follow consumer stopped on its own.
#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    /// A read failed in a way retrying does not fix.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The offset store failed: the position could not be loaded or saved.
    #[error("offset store: {0}")]
    Store(#[from] OffsetStoreError),
    /// After a reconnect the last applied record was not there any more: the log was rewritten
    /// under the consumer's position (see [`recheck`](crate::events::recheck)).
    #[error(
        "partition {partition}: the record at offset {offset} is not the one this consumer applied \
         (CRC {expected_crc:#010x}, now {found}): the log was rewritten under its position — a broker \
         machine crash lost unsynced records and their offsets were reused; stopping rather than \
         skipping the new records",
        found = found_crc.map_or_else(|| "no record".to_owned(), |crc| format!("{crc:#010x}"))
    )]
    LogRewritten {
        /// The partition.
        partition: i32,
        /// The offset of the last applied record.
        offset: i64,
        /// Its checksum when it was applied.
        expected_crc: u32,
        /// The checksum there now; `None` when the log ends before it.
        found_crc: Option<u32>,
    },
}

/// One partition's progress.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PartitionProgress {
    /// The saved position this run started from; `None` when nothing was saved (started at the
    /// earliest offset).
    pub resumed_from: Option<i64>,
    /// The next offset to read (the start position until the first batch).
    pub next_offset: i64,
    /// The last saved position.
    pub checkpointed: Option<i64>,
    /// The partition's end (high watermark) as the last read saw it.
    pub high_watermark: i64,
    /// Counts and checks of the records handled.
    pub tally: PartitionTally,
}

/// The follow consumer's live progress, shared with whoever reports it. Keeping it outside the
/// consumer lets a caller read it while the consumer runs (`/stats`, the demo's table) and
/// cross-check it against a replay after the consumer stopped (the demo's checks).
#[derive(Debug, Default)]
pub struct FollowState {
    partitions: Mutex<BTreeMap<i32, PartitionProgress>>,
}

/// The `/stats` view of a [`FollowState`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FollowSnapshot {
    /// Records handled (distinct offsets, over every partition).
    pub records: u64,
    /// Records handled again.
    pub duplicates: u64,
    /// Per-user order violations (must be 0).
    pub order_violations: u64,
    /// Offsets skipped (must be 0).
    pub skipped_offsets: u64,
    /// Records that are not events.
    pub undecodable: u64,
    /// Per partition: the saved position the run started from, or `null`.
    pub resumed_from: BTreeMap<i32, Option<i64>>,
    /// Per partition: the next offset to read.
    pub next_offset: BTreeMap<i32, i64>,
    /// Per partition: the last saved position.
    pub checkpointed: BTreeMap<i32, Option<i64>>,
    /// Per partition: records handled.
    pub per_partition: BTreeMap<i32, u64>,
    /// Per partition: high watermark minus next offset, as of the last batch.
    pub lag: BTreeMap<i32, i64>,
}

impl FollowState {
    /// Empty progress.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A copy of every partition's progress.
    pub fn partitions(&self) -> BTreeMap<i32, PartitionProgress> {
        self.lock().clone()
    }

    /// The counters, summed and per partition.
    pub fn snapshot(&self) -> FollowSnapshot {
        let partitions = self.lock();
        let sum = |f: fn(&PartitionTally) -> u64| partitions.values().map(|p| f(&p.tally)).sum();
        FollowSnapshot {
            records: sum(|t| t.records),
            duplicates: sum(|t| t.duplicates),
            order_violations: sum(|t| t.order_violations),
            skipped_offsets: sum(|t| t.skipped_offsets),
            undecodable: sum(|t| t.undecodable),
            resumed_from: partitions
                .iter()
                .map(|(&p, s)| (p, s.resumed_from))
                .collect(),
            next_offset: partitions
                .iter()
                .map(|(&p, s)| (p, s.next_offset))
                .collect(),
            checkpointed: partitions
                .iter()
                .map(|(&p, s)| (p, s.checkpointed))
                .collect(),
            per_partition: partitions
                .iter()
                .map(|(&p, s)| (p, s.tally.records))
                .collect(),
            lag: partitions
                .iter()
                .map(|(&p, s)| (p, (s.high_watermark - s.next_offset).max(0)))
                .collect(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<i32, PartitionProgress>> {
        self.partitions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn started(&self, partition: i32, resumed_from: Option<i64>, position: i64) {
        let mut partitions = self.lock();
        let progress = partitions
            .entry(partition)
            .or_insert_with(|| PartitionProgress {
                tally: PartitionTally::new(partition),
                ..PartitionProgress::default()
            });
        progress.resumed_from = resumed_from;
        progress.next_offset = position;
        progress.checkpointed = resumed_from;
        progress.high_watermark = progress.high_watermark.max(position);
    }

    /// The handler: tallies (and so order-checks) every record of the batch.
    fn handle(&self, partition: i32, batch: &ReadBatch) {
        let mut partitions = self.lock();
        let progress = partitions
            .get_mut(&partition)
            .expect("a partition is started before its first batch");
        for record in &batch.records {
            progress.tally.observe(record.offset, &record.payload);
        }
        progress.next_offset = batch.next_offset;
        progress.high_watermark = batch.end;
    }

    /// A read that found nothing new: the end it saw is the partition's end now.
    fn caught_up(&self, partition: i32, end: i64) {
        if let Some(progress) = self.lock().get_mut(&partition) {
            progress.high_watermark = end;
        }
    }

    fn checkpointed(&self, partition: i32, offset: i64) {
        if let Some(progress) = self.lock().get_mut(&partition) {
            progress.checkpointed = Some(offset);
        }
    }
}

/// Follows `config.partitions` (one task each) until `shutdown` is triggered or a partition fails
/// for good. On a clean stop every batch read has been handled and checkpointed.
pub async fn run_follow(
    engine: Arc<dyn LogEngine>,
    store: Arc<dyn OffsetStore>,
    config: FollowConfig,
    state: Arc<FollowState>,
    shutdown: Shutdown,
) -> Result<(), FollowError> {
    let partitions =
        partitions_of(engine.as_ref(), &config.topic, config.partitions.as_deref()).await?;
    run_per_partition(partitions, &shutdown, |partition, stop| {
        let follower = PartitionFollower {
            engine: Arc::clone(&engine),
            store: Arc::clone(&store),
            config: config.clone(),
            partition,
            state: Arc::clone(&state),
        };
        follower.run(stop)
    })
    .await
}

/// One partition's loop.
struct PartitionFollower {
    engine: Arc<dyn LogEngine>,
    store: Arc<dyn OffsetStore>,
    config: FollowConfig,
    partition: i32,
    state: Arc<FollowState>,
}

impl PartitionFollower {
    async fn run(self, stop: Shutdown) -> Result<(), FollowError> {
        let (partition, topic, name) = (
            self.partition,
            self.config.topic.as_str(),
            self.config.consumer_name.as_str(),
        );
        let saved = self.store.load(name, topic, partition).await?;
        let start = saved.map_or(StartAt::Earliest, StartAt::At);
        let Some((log, mut position)) = self.open(start, &stop).await? else {
            return Ok(());
        };
        tracing::info!(
            engine = %self.engine.kind(),
            consumer = name,
            topic,
            partition,
            resumed_from = ?saved,
            position,
            "following"
        );
        self.state.started(partition, saved, position);

        // The last record handled, and the engine's reconnect count when it was read: a batch
        // read after a reconnect may come from a restarted broker, so the log behind the
        // position is checked before that batch is handled (`recheck.rs`).
        let mut applied: Option<Applied> = None;
        let mut reconnects_seen = log.reconnects();
        loop {
            let read = tokio::select! {
                biased;
                () = stop.triggered() => break,
                read = log.read(position, self.config.limits) => read,
            };
            match read {
                Ok(batch) => {
                    if log.reconnects() != reconnects_seen {
                        reconnects_seen = log.reconnects();
                        if let Some(applied) = applied
                            && !self.log_still_holds(log.as_ref(), applied, &stop).await?
                        {
                            break;
                        }
                    }
                    position = batch.next_offset;
                    let Some(last) = batch.records.last() else {
                        self.state.caught_up(partition, batch.end);
                        continue;
                    };
                    applied = Some(Applied::of_log_record(last));
                    // Handle, then save: the order is the at-least-once guarantee.
                    self.state.handle(partition, &batch);
                    tracing::debug!(
                        partition,
                        first_offset = batch.records[0].offset,
                        next_offset = batch.next_offset,
                        records = batch.records.len(),
                        "handled batch"
                    );
                    self.store
                        .save(name, topic, partition, batch.next_offset)
                        .await?;
                    self.state.checkpointed(partition, batch.next_offset);
                }
                Err(error) if error.is_transient() => {
                    tracing::warn!(partition, %error, position, "read failed; retrying from the same position");
                    if !backoff(&stop).await {
                        break;
                    }
                }
                Err(error) => return Err(error.into()),
            }
        }
        tracing::info!(
            partition,
            checkpointed = ?self.state.lock().get(&partition).and_then(|p| p.checkpointed),
            "stopped following; position saved"
        );
        Ok(())
    }

    /// Opens the partition and resolves `start` to an offset, waiting out transient failures
    /// (an engine still starting). `None` when stopped meanwhile.
    async fn open(
        &self,
        start: StartAt,
        stop: &Shutdown,
    ) -> Result<Option<(Arc<dyn PartitionLog>, i64)>, FollowError> {
        let partition = self.partition;
        loop {
            let opened = async {
                let log = self.engine.open(&self.config.topic, partition).await?;
                let bounds = log.bounds().await?;
                Ok::<_, EngineError>((log, start.offset_in(bounds)))
            }
            .await;
            match opened {
                Ok(opened) => return Ok(Some(opened)),
                Err(error) if error.is_transient() => {
                    tracing::warn!(partition, %error, "cannot start following yet; retrying");
                    if !backoff(stop).await {
                        return Ok(None);
                    }
                }
                Err(error) => return Err(error.into()),
            }
        }
    }

    /// After a reconnect: checks that the last applied record is still in the log as it was
    /// read, retrying while the engine is unreachable. `Ok(true)`: carry on; `Ok(false)`: the
    /// stop signal came first; an error if the log was rewritten under the position.
    async fn log_still_holds(
        &self,
        log: &dyn PartitionLog,
        applied: Applied,
        stop: &Shutdown,
    ) -> Result<bool, FollowError> {
        let partition = self.partition;
        loop {
            match recheck_log(log, applied).await {
                Ok(Recheck::Same | Recheck::Retained) => return Ok(true),
                Ok(Recheck::Rewritten {
                    offset,
                    expected_crc,
                    found_crc,
                }) => {
                    return Err(FollowError::LogRewritten {
                        partition,
                        offset,
                        expected_crc,
                        found_crc,
                    });
                }
                Err(error) if error.is_transient() => {
                    tracing::warn!(partition, %error, offset = applied.offset, "cannot re-check the last applied record yet; retrying");
                    if !backoff(stop).await {
                        return Ok(false);
                    }
                }
                Err(error) => return Err(error.into()),
            }
        }
    }
}
