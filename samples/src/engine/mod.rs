//! The samples' edge: one small interface to a totally ordered, durable, replayable partition,
//! with two engines behind it — booblik (the default) and NATS JetStream (a replicated stream per
//! partition, for users who outgrow one broker).
//!
//! Every pattern in the samples needs exactly four things of a partition, and nothing else:
//!
//! | need | method | booblik | JetStream |
//! |---|---|---|---|
//! | append a batch, learn its offsets, at an ack level | [`PartitionLog::append`] | PRODUCE (WRITTEN / FORCED) | publish + PubAck per record |
//! | read from an offset with a bounded wait | [`PartitionLog::read`] | FETCH v2 long poll | pull consumer `ByStartSequence`, fetch with an expiry |
//! | the partition's bounds | [`PartitionLog::bounds`] | METADATA | stream info (first and last sequence) |
//! | "the connection was reopened" | [`PartitionLog::reconnects`] | the reader reopened its socket | the client's `Connected` event after a `Disconnected` |
//!
//! The protocol code (the queue's verdicts, the state machine, the verifier, the projection
//! model, the tally) takes records and offsets, never an engine: it cannot branch on which one
//! it runs on. Positions stay in the consumer's own `OffsetStore` on both engines.
//!
//! # Offsets
//!
//! An offset is the record's position in its partition: booblik's offset (the first record ever
//! written is 0) or JetStream's stream sequence (the first is 1). [`Bounds::origin`] says which;
//! code that needs "the very beginning" asks for it instead of writing 0, and a reader that starts
//! "wherever the log begins" says [`StartAt::Earliest`]. [`ReadBatch::end`] is the partition's
//! end as a read saw it: what a follower's lag is measured against.
//!
//! # Layout
//!
//! | file | what it is |
//! |---|---|
//! | `mod.rs` | the interface: [`LogEngine`], [`PartitionLog`], their types and errors |
//! | `booblik.rs` | over `booblik-client` |
//! | `jetstream/` | over `async-nats`: naming of streams, the partition log, topic setup |

mod booblik;
pub mod jetstream;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

pub use booblik::BooblikEngine;
pub use jetstream::JetStreamEngine;

/// Which engine the samples run on (the `--engine` flag).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineKind {
    /// booblik: one broker, the default.
    Booblik,
    /// NATS JetStream: one replicated stream per partition.
    Jetstream,
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EngineKind::Booblik => "booblik",
            EngineKind::Jetstream => "jetstream",
        })
    }
}

/// How durable an append is before [`PartitionLog::append`] returns (the samples' `--ack`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Ack {
    /// booblik: in the log (page cache). JetStream: stored by the stream (see `docs/jetstream.md`
    /// for what that means at R1 and R3).
    Written,
    /// booblik: fsynced. JetStream: stored by a quorum of the stream's replicas; whether that
    /// includes an fsync is a server setting (`docs/jetstream.md`).
    Forced,
}

/// A topic's partition, as every engine names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PartitionName {
    /// The topic (booblik's topic name rules: letters, digits, `.`, `_`, `-`).
    pub topic: String,
    /// The partition, from 0.
    pub partition: i32,
}

impl PartitionName {
    /// A whole topic (partition -1), for errors about the topic rather than one partition.
    pub fn whole(topic: &str) -> Self {
        Self {
            topic: topic.to_owned(),
            partition: -1,
        }
    }
}

impl fmt::Display for PartitionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.topic, self.partition)
    }
}

/// One record read back: its offset and its bytes (CRC-checked by booblik's client; JetStream
/// checks its own storage).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    /// The record's offset.
    pub offset: i64,
    /// The record's bytes.
    pub payload: Bytes,
}

/// What one read returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadBatch {
    /// Consecutive records from the offset asked for (possibly none: a caught-up reader).
    pub records: Vec<LogRecord>,
    /// Where the next read starts, and what a checkpoint saves.
    pub next_offset: i64,
    /// The partition's end as this read saw it (its high watermark): at least `next_offset`.
    /// What a reader's lag is measured against.
    pub end: i64,
}

/// Where a reader starts in a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartAt {
    /// The first record still held ([`Bounds::start`]).
    Earliest,
    /// This offset (a saved position, a snapshot's position).
    At(i64),
}

impl StartAt {
    /// The offset this start means in a partition of `bounds`.
    pub fn offset_in(self, bounds: Bounds) -> i64 {
        match self {
            StartAt::Earliest => bounds.start,
            StartAt::At(offset) => offset,
        }
    }
}

/// Limits of one read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimits {
    /// At most this many records. In `1..=`[`MAX_READ_RECORDS`].
    pub max_records: usize,
    /// At most about this many payload bytes (an engine may return one record beyond it rather
    /// than none).
    pub max_bytes: usize,
    /// How long to wait for the first record when none is there yet; zero answers at once with
    /// what is there (a replay's reads). At most [`MAX_READ_WAIT`]. Both engines answer as soon
    /// as records are there (booblik's long poll with `min_bytes` 1; JetStream's no-wait pull
    /// with an expiry), so a caught-up follower learns of a new record in about a round trip.
    pub wait: Duration,
}

/// The most records one read asks for.
pub const MAX_READ_RECORDS: usize = 10_000;
/// The longest wait of one read (booblik clamps its long poll to 60 s; we stay well inside).
pub const MAX_READ_WAIT: Duration = Duration::from_secs(30);

impl Default for ReadLimits {
    fn default() -> Self {
        Self {
            max_records: 1_000,
            max_bytes: 1024 * 1024,
            wait: Duration::from_millis(500),
        }
    }
}

/// A partition's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// The offset of the first record this partition ever had or will have: 0 on booblik, 1 on
    /// JetStream. A reader that finds `start > origin` knows records were dropped (retention).
    pub origin: i64,
    /// The first offset still held (booblik's `logStartOffset`).
    pub start: i64,
    /// The offset the next record will get (booblik's high watermark).
    pub end: i64,
}

/// Where an append put its records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// One offset per record, in order. Consecutive on booblik (a batch is written as one);
    /// increasing on JetStream, where another writer's records may fall in between.
    pub offsets: Vec<i64>,
}

impl Appended {
    /// The offset of the first record.
    pub fn first(&self) -> Option<i64> {
        self.offsets.first().copied()
    }

    /// The offset of the last record.
    pub fn last(&self) -> Option<i64> {
        self.offsets.last().copied()
    }
}

/// Why an engine call failed.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The topic or partition does not exist.
    #[error("{0}: no such topic or partition")]
    Unknown(PartitionName),
    /// The offset is outside what the partition holds.
    #[error("{partition}: offset {offset} is outside the log ({start}..={end})")]
    OutOfRange {
        /// The partition.
        partition: PartitionName,
        /// The offset asked for.
        offset: i64,
        /// The first offset held.
        start: i64,
        /// The next offset to be written.
        end: i64,
    },
    /// The engine refused the request (a record too large, an empty record, bad limits).
    #[error("{partition}: refused: {reason}")]
    Refused {
        /// The partition.
        partition: PartitionName,
        /// The engine's words.
        reason: String,
    },
    /// The engine could not be reached or did not answer in time: try again.
    #[error("{partition}: unavailable: {reason}")]
    Unavailable {
        /// The partition (or the topic, with partition -1).
        partition: PartitionName,
        /// What happened.
        reason: String,
    },
    /// The engine answered something that breaks the contract (a gap, a sequence out of order).
    #[error("{partition}: contract broken: {reason}")]
    Broken {
        /// The partition.
        partition: PartitionName,
        /// What was wrong.
        reason: String,
    },
}

impl EngineError {
    /// Whether retrying the same call later may succeed (a lost connection, a leader election).
    pub fn is_transient(&self) -> bool {
        matches!(self, EngineError::Unavailable { .. })
    }
}

/// One partition of one topic on some engine.
#[async_trait]
pub trait PartitionLog: Send + Sync + fmt::Debug {
    /// Which partition this is.
    fn name(&self) -> &PartitionName;

    /// Appends `records` (each non-empty) and returns their offsets once `ack` holds.
    async fn append(&self, records: &[Bytes], ack: Ack) -> Result<Appended, EngineError>;

    /// Reads consecutive records from `from`, waiting up to `limits.wait` for the first one.
    /// `from` below the partition's start is [`EngineError::OutOfRange`]; `from` at its end
    /// returns no records after the wait.
    async fn read(&self, from: i64, limits: ReadLimits) -> Result<ReadBatch, EngineError>;

    /// The partition's bounds now.
    async fn bounds(&self) -> Result<Bounds, EngineError>;

    /// How many times the connection under this partition was reopened since it was opened.
    /// A reader that must know it may be talking to a restarted (or failed-over) engine, to
    /// re-check the record behind its position, watches this number grow.
    fn reconnects(&self) -> u64;
}

/// An engine: where partitions are opened.
#[async_trait]
pub trait LogEngine: Send + Sync + fmt::Debug {
    /// Which engine this is.
    fn kind(&self) -> EngineKind;

    /// How many partitions `topic` has (an error when it has none).
    async fn partition_count(&self, topic: &str) -> Result<i32, EngineError>;

    /// Opens one partition of `topic`.
    async fn open(&self, topic: &str, partition: i32)
    -> Result<Arc<dyn PartitionLog>, EngineError>;
}

/// What a sample that takes "an engine" accepts: an engine itself, or booblik's [`Client`]
/// (wrapped in a [`BooblikEngine`], the default engine). Lets the task queue's entry points take
/// either without a branch on the engine.
///
/// [`Client`]: booblik_client::Client
pub trait IntoEngine {
    /// The engine.
    fn into_engine(self) -> Arc<dyn LogEngine>;
}

impl IntoEngine for Arc<dyn LogEngine> {
    fn into_engine(self) -> Arc<dyn LogEngine> {
        self
    }
}

impl IntoEngine for &Arc<dyn LogEngine> {
    fn into_engine(self) -> Arc<dyn LogEngine> {
        Arc::clone(self)
    }
}

impl IntoEngine for BooblikEngine {
    fn into_engine(self) -> Arc<dyn LogEngine> {
        Arc::new(self)
    }
}

impl IntoEngine for JetStreamEngine {
    fn into_engine(self) -> Arc<dyn LogEngine> {
        Arc::new(self)
    }
}

impl IntoEngine for booblik_client::Client {
    fn into_engine(self) -> Arc<dyn LogEngine> {
        Arc::new(BooblikEngine::new(self))
    }
}

impl IntoEngine for &booblik_client::Client {
    fn into_engine(self) -> Arc<dyn LogEngine> {
        Arc::new(BooblikEngine::new(self.clone()))
    }
}

/// Checks limits the way every engine must.
pub(crate) fn check_limits(name: &PartitionName, limits: ReadLimits) -> Result<(), EngineError> {
    if !(1..=MAX_READ_RECORDS).contains(&limits.max_records)
        || limits.max_bytes == 0
        || limits.wait > MAX_READ_WAIT
    {
        return Err(EngineError::Refused {
            partition: name.clone(),
            reason: format!(
                "read limits out of range: max_records {} (1..={MAX_READ_RECORDS}), max_bytes {} (> 0), wait {:?} (<= {MAX_READ_WAIT:?})",
                limits.max_records, limits.max_bytes, limits.wait
            ),
        });
    }
    Ok(())
}
