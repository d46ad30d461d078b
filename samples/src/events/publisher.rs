//! The publisher: writes keyed [`UserEvent`]s at a steady rate, to any engine.
//!
//! * **Key = user id.** The key is hashed with the partitioner every booblik client shares
//!   (FNV-1a, `booblik_protocol::partition_for_key`), so all of one user's events land in one
//!   partition, in the order they were sent. That is the only ordering a log gives: per
//!   partition, never across partitions. On JetStream a partition is a stream of its own, so the
//!   same key lands in the same stream.
//! * **The publisher batches, per partition.** Sending only queues the record (at most
//!   [`MAX_PENDING_RECORDS`] a partition; sending waits when the queue is full). One writer task
//!   per partition takes whatever has queued — up to [`MAX_BATCH_RECORDS`] — appends it as one
//!   batch with [`PartitionLog::append`], and counts what the engine acknowledged. Waiting for
//!   each record before sending the next would cost a round trip per record; one append in
//!   flight per partition keeps each user's events in the order sent.
//! * **Stats count acknowledged records**, not attempts: `sent` and `per_partition` are what the
//!   engine confirmed.
//! * **A failed append's outcome is unknown.** Its records are counted in `failed` (and
//!   `failed_per_partition`), but "failed" means no acknowledgement arrived, not that nothing was
//!   written: the connection may have broken after the engine wrote them (on JetStream: some of
//!   the batch's publishes may have been stored). So the log may hold the event or not; its `seq`
//!   is used up either way, and a consumer sees either the event or a gap in that user's
//!   sequence — never a reordering, because a failed batch is not retried. The demo's
//!   cross-check accepts a log that grew by anything from the acknowledged count to
//!   acknowledged + failed, and says which. An error retrying cannot fix (the engine refused the
//!   records) stops the publisher.
//!
//! Users are not equally active: user `i` of `n` is picked with a skewed distribution
//! (`n × r²` for uniform `r`), so the projection's "top users" has something to show.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use booblik_protocol::partition_for_key;
use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::engine::{Ack, EngineError, LogEngine, PartitionLog};
use crate::events::event::{EventKind, UserEvent};
use crate::support::clock::wall_clock_ms;
use crate::support::pacer::Pacer;
use crate::support::shutdown::Shutdown;

/// Records queued for one partition's writer, at most; sending waits when the queue is full.
pub const MAX_PENDING_RECORDS: usize = 10_000;

/// Records one append carries, at most (events are ~50 bytes: a batch stays far below any
/// engine's request limit).
pub const MAX_BATCH_RECORDS: usize = 500;

/// Largest `--users`.
pub const MAX_USERS: u32 = 1_000_000;

/// Without a rate limit, records sent between two looks at the stop signal.
const UNLIMITED_BURST: u64 = 1_000;

/// What to publish.
#[derive(Debug, Clone)]
pub struct PublisherConfig {
    /// The topic.
    pub topic: String,
    /// Records per second; 0 sends as fast as the producer's backpressure allows.
    pub rate_per_s: u32,
    /// Number of distinct users (1..=[`MAX_USERS`]).
    pub users: u32,
    /// Stop after this many records (attempted); `None` runs until stopped.
    pub count: Option<u64>,
    /// When the engine acknowledges.
    pub ack: Ack,
}

/// Why publishing stopped early.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The configuration cannot be honoured.
    #[error("invalid publisher configuration: {0}")]
    InvalidConfig(String),
    /// The topic could not be opened, or the engine refused records.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// What the publisher has done so far.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublisherSnapshot {
    /// This run's id (every event carries it).
    pub publisher_id: Uuid,
    /// Records queued for sending.
    pub attempted: u64,
    /// Records acknowledged.
    pub sent: u64,
    /// Records whose delivery failed: not acknowledged, which does not mean not written.
    pub failed: u64,
    /// Failed deliveries per partition.
    pub failed_per_partition: BTreeMap<i32, u64>,
    /// Acknowledged records per partition.
    pub per_partition: BTreeMap<i32, u64>,
    /// The highest acknowledged offset per partition.
    pub last_offset: BTreeMap<i32, i64>,
    /// Acknowledged events per user. Not part of `/stats` (it grows with `--users`).
    #[serde(skip_serializing, default)]
    pub per_user: BTreeMap<String, u64>,
}

/// The publisher's live counters, shared with whoever reports them.
#[derive(Debug, Default)]
pub struct PublisherStats {
    inner: Mutex<PublisherSnapshot>,
}

impl PublisherStats {
    /// Empty counters.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A copy of the counters.
    pub fn snapshot(&self) -> PublisherSnapshot {
        self.lock().clone()
    }

    /// The counters as the `/stats` JSON: `sent`, `per_partition`, `last_offset`, ….
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(&*self.lock()).expect("the snapshot serialises")
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PublisherSnapshot> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts the outcome of one append: its records and, when acknowledged, their offsets.
    fn settle(&self, partition: i32, users: Vec<String>, outcome: &Result<Vec<i64>, EngineError>) {
        let mut stats = self.lock();
        let n = users.len() as u64;
        match outcome {
            Ok(offsets) => {
                stats.sent += n;
                *stats.per_partition.entry(partition).or_insert(0) += n;
                for user in users {
                    *stats.per_user.entry(user).or_insert(0) += 1;
                }
                if let Some(&offset) = offsets.iter().max() {
                    let last = stats.last_offset.entry(partition).or_insert(offset);
                    *last = (*last).max(offset);
                }
            }
            Err(error) => {
                let before = stats.failed;
                stats.failed += n;
                *stats.failed_per_partition.entry(partition).or_insert(0) += n;
                // One line per failed batch would flood the log when the engine is down: one
                // each time the count passes a power of two.
                if (before + 1..=stats.failed).any(u64::is_power_of_two) {
                    tracing::warn!(partition, %error, failed = stats.failed, "append failed");
                }
            }
        }
    }
}

/// Kinds after a user's first event (`SignedUp`), page views the most common.
const LATER_KINDS: [EventKind; 7] = [
    EventKind::LoggedIn,
    EventKind::ViewedPage,
    EventKind::ViewedPage,
    EventKind::ViewedPage,
    EventKind::AddedToCart,
    EventKind::Purchased,
    EventKind::LoggedOut,
];

/// The next event to send: which user, and that user's next `seq`.
struct EventSource {
    publisher_id: Uuid,
    users: u32,
    next_seq: HashMap<u32, u64>,
    rng: StdRng,
}

impl EventSource {
    fn next(&mut self) -> UserEvent {
        let r: f64 = self.rng.random();
        let user = ((f64::from(self.users) * r * r) as u32).min(self.users - 1);
        let seq = self.next_seq.entry(user).or_insert(0);
        let this_seq = *seq;
        *seq += 1;
        let kind = if this_seq == 0 {
            EventKind::SignedUp
        } else {
            LATER_KINDS[self.rng.random_range(0..LATER_KINDS.len())]
        };
        UserEvent {
            publisher_id: self.publisher_id,
            user_id: format!("user-{user:03}"),
            seq: this_seq,
            kind,
            at_ms: wall_clock_ms(),
        }
    }
}

/// A record queued for a partition's writer: whose event it is, and its bytes.
type Queued = (String, Bytes);

/// Publishes until `config.count` records were attempted or `shutdown` is triggered, then waits
/// for every queued record to be appended. Returns the final counters (also in `stats`).
pub async fn run_publisher(
    engine: Arc<dyn LogEngine>,
    config: PublisherConfig,
    stats: Arc<PublisherStats>,
    shutdown: Shutdown,
) -> Result<PublisherSnapshot, PublishError> {
    if !(1..=MAX_USERS).contains(&config.users) {
        return Err(PublishError::InvalidConfig(format!(
            "users must be in 1..={MAX_USERS}"
        )));
    }
    let partitions = engine.partition_count(&config.topic).await?;
    let mut logs = Vec::with_capacity(partitions as usize);
    for partition in 0..partitions {
        logs.push(engine.open(&config.topic, partition).await?);
    }
    let mut source = EventSource {
        publisher_id: Uuid::new_v4(),
        users: config.users,
        next_seq: HashMap::new(),
        rng: StdRng::from_os_rng(),
    };
    stats.lock().publisher_id = source.publisher_id;
    tracing::info!(
        engine = %engine.kind(),
        topic = %config.topic,
        partitions,
        publisher_id = %source.publisher_id,
        rate_per_s = config.rate_per_s,
        users = config.users,
        count = ?config.count,
        ack = ?config.ack,
        "publishing"
    );

    // One writer per partition. A writer that meets an error retrying cannot fix triggers
    // `refused`, which stops the sending loop.
    let refused = Shutdown::new();
    let mut queues = Vec::with_capacity(logs.len());
    let mut writers = Vec::with_capacity(logs.len());
    for log in logs {
        let (queue, pending) = mpsc::channel::<Queued>(MAX_PENDING_RECORDS);
        queues.push(queue);
        writers.push(tokio::spawn(write_partition(
            log,
            pending,
            config.ack,
            Arc::clone(&stats),
            refused.clone(),
        )));
    }

    let limit = config.count.unwrap_or(u64::MAX);
    let mut pacer = Pacer::new(config.rate_per_s);
    let mut attempted: u64 = 0;
    while attempted < limit && !shutdown.is_triggered() && !refused.is_triggered() {
        let due = pacer.due(attempted).unwrap_or(UNLIMITED_BURST);
        for _ in 0..due.min(limit - attempted) {
            let event = source.next();
            let partition = partition_for_key(event.key(), partitions as u32) as usize;
            // A writer only drops its queue after a refusal, which stops this loop next round.
            if queues[partition]
                .send((event.user_id.clone(), Bytes::from(event.encode())))
                .await
                .is_err()
            {
                break;
            }
            attempted += 1;
            stats.lock().attempted = attempted;
        }
        if config.rate_per_s > 0 {
            tokio::select! {
                () = shutdown.triggered() => {}
                () = refused.triggered() => {}
                () = tokio::time::sleep(Pacer::tick()) => {}
            }
        }
    }

    // Whatever stopped us, append what was queued: the counters must match the log.
    drop(queues);
    let mut result = Ok(());
    for writer in writers {
        if let Err(error) = writer.await.expect("a partition writer never panics") {
            result = result.and(Err(error));
        }
    }
    let snapshot = stats.snapshot();
    tracing::info!(
        attempted = snapshot.attempted,
        sent = snapshot.sent,
        failed = snapshot.failed,
        "publisher stopped"
    );
    result?;
    Ok(snapshot)
}

/// One partition's writer: appends what has queued, one batch at a time, until the queue is
/// closed and empty. Returns the first error retrying cannot fix (after counting its batch).
async fn write_partition(
    log: Arc<dyn PartitionLog>,
    mut pending: mpsc::Receiver<Queued>,
    ack: Ack,
    stats: Arc<PublisherStats>,
    refused: Shutdown,
) -> Result<(), EngineError> {
    let partition = log.name().partition;
    let mut batch: Vec<Queued> = Vec::with_capacity(MAX_BATCH_RECORDS);
    while pending.recv_many(&mut batch, MAX_BATCH_RECORDS).await > 0 {
        let (users, records): (Vec<String>, Vec<Bytes>) = batch.drain(..).unzip();
        let outcome = log
            .append(&records, ack)
            .await
            .map(|appended| appended.offsets);
        stats.settle(partition, users, &outcome);
        if let Err(error) = outcome
            && !error.is_transient()
        {
            refused.trigger();
            return Err(error);
        }
    }
    Ok(())
}
