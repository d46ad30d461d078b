//! The replay consumer: reads history up to the high watermark, then ends with a summary.
//!
//! A replay fixes its end when it starts — the partition's end ([`Bounds::end`], booblik's high
//! watermark, JetStream's last sequence + 1) at that moment — so it finishes even while a
//! publisher keeps writing: records appended meanwhile belong to whoever
//! follows. It keeps no position: it always starts at the beginning of the log (or wherever the
//! caller says: [`StartAt`]) and is meant to be run again, which is what a log is for — reprocessing history
//! with new code, auditing, or, as in the demo, checking what another consumer saw.
//!
//! The summary counts per partition and per user and carries the same checks as every reader (see
//! [`tally`](crate::events::tally)): a replay is also the cheapest way to verify a log.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::engine::{Bounds, EngineError, LogEngine, ReadLimits, StartAt};
use crate::events::tally::PartitionTally;
use crate::support::per_partition::partitions_of;
use crate::support::retry::retry_transient;

/// Most attempts at one read when the engine keeps failing transiently.
pub const MAX_ATTEMPTS_PER_BATCH: u32 = 10;

/// What to replay.
#[derive(Debug, Clone)]
pub struct ReplayConfig {
    /// The topic.
    pub topic: String,
    /// Partitions to read; `None` reads every partition of the topic.
    pub partitions: Option<Vec<i32>>,
    /// Read limits (the wait is not used: a replay reads what is there).
    pub limits: ReadLimits,
}

/// Where one partition's replay starts and stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayRange {
    /// First offset (`Earliest`: the log start).
    pub from: StartAt,
    /// Stop before this offset; `None` stops at the partition's end seen at the start.
    pub to: Option<i64>,
}

impl ReplayRange {
    /// The whole history: from the log start to the high watermark.
    pub const ALL: ReplayRange = ReplayRange {
        from: StartAt::Earliest,
        to: None,
    };
}

/// One partition's replay, before summarising.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayedPartition {
    /// What was read, with its checks.
    pub tally: PartitionTally,
    /// First offset read.
    pub from_offset: i64,
    /// Where the replay stopped.
    pub end_offset: i64,
}

/// One partition in a [`ReplaySummary`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionReplay {
    /// First offset read.
    pub from_offset: i64,
    /// Where the replay stopped (the high watermark at its start, or the range's end).
    pub end_offset: i64,
    /// Records read.
    pub records: u64,
    /// Events among them (records that decode as `UserEvent`).
    pub events: u64,
    /// Records that are not events.
    pub undecodable: u64,
    /// Per-user order violations.
    pub order_violations: u64,
    /// Offsets skipped.
    pub skipped_offsets: u64,
}

/// The replay consumer's result: printed as JSON by the binary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplaySummary {
    /// The topic.
    pub topic: String,
    /// Records read, every partition.
    pub records: u64,
    /// Per partition.
    pub per_partition: BTreeMap<i32, PartitionReplay>,
    /// Events per user, every partition.
    pub per_user: BTreeMap<String, u64>,
    /// Per-user order violations plus skipped offsets, every partition (must be 0).
    pub violations: u64,
    /// Records that are not events.
    pub undecodable: u64,
}

impl ReplaySummary {
    /// Summarises per-partition replays.
    pub fn new(topic: &str, replayed: &BTreeMap<i32, ReplayedPartition>) -> Self {
        let mut per_user: BTreeMap<String, u64> = BTreeMap::new();
        let mut per_partition = BTreeMap::new();
        for (&partition, replay) in replayed {
            let tally = &replay.tally;
            for (user, count) in &tally.per_user {
                *per_user.entry(user.clone()).or_insert(0) += count;
            }
            per_partition.insert(
                partition,
                PartitionReplay {
                    from_offset: replay.from_offset,
                    end_offset: replay.end_offset,
                    records: tally.records,
                    events: tally.events(),
                    undecodable: tally.undecodable,
                    order_violations: tally.order_violations,
                    skipped_offsets: tally.skipped_offsets,
                },
            );
        }
        let tallies = || replayed.values().map(|replay| &replay.tally);
        Self {
            topic: topic.to_owned(),
            records: tallies().map(|t| t.records).sum(),
            per_partition,
            per_user,
            violations: tallies().map(PartitionTally::violations).sum(),
            undecodable: tallies().map(|t| t.undecodable).sum(),
        }
    }
}

/// Replays the whole history of `config.partitions`, concurrently, and summarises it.
pub async fn replay(
    engine: &dyn LogEngine,
    config: &ReplayConfig,
) -> Result<ReplaySummary, EngineError> {
    let partitions = partitions_of(engine, &config.topic, config.partitions.as_deref()).await?;
    let replays = partitions.iter().map(|&partition| async move {
        let replayed = replay_partition(
            engine,
            &config.topic,
            partition,
            ReplayRange::ALL,
            config.limits,
        )
        .await?;
        Ok::<_, EngineError>((partition, replayed))
    });
    let replayed = futures::future::try_join_all(replays)
        .await?
        .into_iter()
        .collect::<BTreeMap<_, _>>();
    Ok(ReplaySummary::new(&config.topic, &replayed))
}

/// Replays one partition over `range`. A transient failure retries the same read (the position
/// does not move on an error), up to [`MAX_ATTEMPTS_PER_BATCH`] times.
pub async fn replay_partition(
    engine: &dyn LogEngine,
    topic: &str,
    partition: i32,
    range: ReplayRange,
    limits: ReadLimits,
) -> Result<ReplayedPartition, EngineError> {
    let what = format!("replay of {topic}/{partition}");
    let log = retry_transient(&what, MAX_ATTEMPTS_PER_BATCH, || {
        engine.open(topic, partition)
    })
    .await?;
    let bounds: Bounds = retry_transient(&what, MAX_ATTEMPTS_PER_BATCH, || log.bounds()).await?;
    let from_offset = range.from.offset_in(bounds);
    let end_offset = range.to.map_or(bounds.end, |to| to.min(bounds.end));
    // What is there, at once: nothing below the end needs waiting for.
    let limits = ReadLimits {
        wait: Duration::ZERO,
        ..limits
    };
    let mut tally = PartitionTally::new(partition);
    let mut position = from_offset;
    while position < end_offset {
        let batch =
            retry_transient(&what, MAX_ATTEMPTS_PER_BATCH, || log.read(position, limits)).await?;
        if batch.records.is_empty() {
            // The log ends before the end it reported (it cannot shrink): stop, the tally says
            // how far it got.
            break;
        }
        for record in batch.records.iter().filter(|r| r.offset < end_offset) {
            tally.observe(record.offset, &record.payload);
        }
        position = batch.next_offset;
    }
    tracing::debug!(
        partition,
        from_offset,
        end_offset,
        records = tally.records,
        "replayed"
    );
    Ok(ReplayedPartition {
        tally,
        from_offset,
        end_offset,
    })
}
