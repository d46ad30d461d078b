//! The publisher: writes keyed [`UserEvent`]s at a steady rate.
//!
//! * **Key = user id.** The producer hashes the key with the partitioner every booblik client
//!   shares, so all of one user's events land in one partition, in the order they were sent. That
//!   is the only ordering a log gives: per partition, never across partitions.
//! * **The producer batches.** `send` only queues the record and returns a [`Delivery`] — a
//!   future of its offset. Waiting for each record before sending the next would cost a round
//!   trip per record; instead the deliveries go into a queue of at most
//!   [`MAX_PENDING_DELIVERIES`] (`send` waits when it is full), and a separate task, the settler,
//!   awaits them one after another, in the order sent, and counts what the broker acknowledged.
//! * **Stats count acknowledged records**, not attempts: `sent` and `per_partition` are what the
//!   broker confirmed (with `--ack none` it confirms nothing, so a record counts once it left).
//! * **A failed delivery's outcome is unknown.** It is counted in `failed` (and
//!   `failed_per_partition`), but "failed" means no acknowledgement arrived, not that nothing was
//!   written: the connection may have broken after the broker wrote the record. So the log may
//!   hold the event or not; its `seq` is used up either way, and a consumer sees either the event
//!   or a gap in that user's sequence — never a reordering. The demo's cross-check accepts a log
//!   that grew by anything from the acknowledged count to acknowledged + failed, and says which.
//!
//! Users are not equally active: user `i` of `n` is picked with a skewed distribution
//! (`n × r²` for uniform `r`), so the projection's "top users" has something to show.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use booblik_client::{AckPolicy, Client, ClientError, Delivery, ProducerConfig};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::events::event::{EventKind, UserEvent};
use crate::support::clock::wall_clock_ms;
use crate::support::pacer::Pacer;
use crate::support::shutdown::Shutdown;

/// Deliveries queued for the settler, at most; `send` waits when the queue is full (the settler
/// awaits them one at a time, in the order sent).
pub const MAX_PENDING_DELIVERIES: usize = 10_000;

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
    /// When the broker acknowledges.
    pub ack: AckPolicy,
}

/// Why publishing stopped early.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The configuration cannot be honoured.
    #[error("invalid publisher configuration: {0}")]
    InvalidConfig(String),
    /// The producer could not start or refused a record.
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// What the publisher has done so far.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublisherSnapshot {
    /// This run's id (every event carries it).
    pub publisher_id: Uuid,
    /// Records handed to the producer.
    pub attempted: u64,
    /// Records acknowledged (or, under ack NONE, written to the socket).
    pub sent: u64,
    /// Records whose delivery failed: not acknowledged, which does not mean not written.
    pub failed: u64,
    /// Failed deliveries per partition.
    pub failed_per_partition: BTreeMap<i32, u64>,
    /// Acknowledged records per partition.
    pub per_partition: BTreeMap<i32, u64>,
    /// The highest acknowledged offset per partition (empty under ack NONE).
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

    fn settle(&self, user_id: String, partition: i32, outcome: &Result<Option<i64>, ClientError>) {
        let mut stats = self.lock();
        match outcome {
            Ok(offset) => {
                stats.sent += 1;
                *stats.per_partition.entry(partition).or_insert(0) += 1;
                *stats.per_user.entry(user_id).or_insert(0) += 1;
                if let Some(offset) = *offset {
                    let last = stats.last_offset.entry(partition).or_insert(offset);
                    *last = (*last).max(offset);
                }
            }
            Err(error) => {
                stats.failed += 1;
                *stats.failed_per_partition.entry(partition).or_insert(0) += 1;
                // One line per failed record would flood the log when the broker is down.
                if stats.failed.is_power_of_two() {
                    tracing::warn!(partition, %error, failed = stats.failed, "delivery failed");
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

/// Publishes until `config.count` records were attempted or `shutdown` is triggered, then flushes
/// and waits for every delivery. Returns the final counters (also in `stats`).
pub async fn run_publisher(
    client: Client,
    config: PublisherConfig,
    stats: Arc<PublisherStats>,
    shutdown: Shutdown,
) -> Result<PublisherSnapshot, PublishError> {
    if !(1..=MAX_USERS).contains(&config.users) {
        return Err(PublishError::InvalidConfig(format!(
            "users must be in 1..={MAX_USERS}"
        )));
    }
    let producer = client
        .producer(
            &config.topic,
            ProducerConfig {
                ack: config.ack,
                ..ProducerConfig::default()
            },
        )
        .await?;
    let mut source = EventSource {
        publisher_id: Uuid::new_v4(),
        users: config.users,
        next_seq: HashMap::new(),
        rng: StdRng::from_os_rng(),
    };
    stats.lock().publisher_id = source.publisher_id;
    tracing::info!(
        topic = %config.topic,
        publisher_id = %source.publisher_id,
        rate_per_s = config.rate_per_s,
        users = config.users,
        count = ?config.count,
        ack = config.ack.name(),
        "publishing"
    );

    let (deliveries, mut pending) = mpsc::channel::<(String, Delivery)>(MAX_PENDING_DELIVERIES);
    let settler = {
        let stats = Arc::clone(&stats);
        tokio::spawn(async move {
            while let Some((user_id, delivery)) = pending.recv().await {
                let partition = delivery.partition();
                let outcome = delivery.await;
                stats.settle(user_id, partition, &outcome);
            }
        })
    };

    let limit = config.count.unwrap_or(u64::MAX);
    let mut pacer = Pacer::new(config.rate_per_s);
    let mut attempted: u64 = 0;
    let result = loop {
        if attempted >= limit || shutdown.is_triggered() {
            break Ok(());
        }
        let due = pacer.due(attempted).unwrap_or(UNLIMITED_BURST);
        let mut failure = None;
        for _ in 0..due.min(limit - attempted) {
            let event = source.next();
            match producer.send(Some(event.key()), event.encode()).await {
                Ok(delivery) => {
                    attempted += 1;
                    stats.lock().attempted = attempted;
                    // The settler only stops when we drop the sender, so this cannot fail.
                    let _ = deliveries.send((event.user_id, delivery)).await;
                }
                Err(error) => {
                    failure = Some(error);
                    break;
                }
            }
        }
        if let Some(error) = failure {
            break Err(error);
        }
        if config.rate_per_s > 0 {
            tokio::select! {
                () = shutdown.triggered() => {}
                () = tokio::time::sleep(Pacer::tick()) => {}
            }
        }
    };

    // Whatever stopped us, settle what was sent: the counters must match the log.
    let flushed = producer.flush().await;
    drop(deliveries);
    let _ = settler.await;
    let snapshot = stats.snapshot();
    tracing::info!(
        attempted = snapshot.attempted,
        sent = snapshot.sent,
        failed = snapshot.failed,
        "publisher stopped"
    );
    result?;
    flushed?;
    Ok(snapshot)
}
