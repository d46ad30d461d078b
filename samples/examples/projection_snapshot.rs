//! A read model whose state and positions live in **one file**: restore it on start, follow from
//! the positions it holds, and after each batch write both again with one durable replace
//! (temp file + fsync + rename + directory fsync, `booblik_offset_store::durable_file`). A crash
//! at any instant leaves the previous snapshot or the new one — state and positions always agree.
//! Copy this; the production version is `src/events/projection/` (`snapshot.rs`).
//!
//! Run: `cargo run --release -p booblik-samples --example projection_snapshot` (an embedded broker),
//! or with `-- --broker host:port` against a running one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use booblik_client::{Batch, ConsumerConfig, ProducerConfig, StartPosition};
use booblik_offset_store::durable_file;
use booblik_samples::events::{EventKind, UserEvent};
use booblik_samples::support::example::{ExampleArgs, ExampleBroker};
use clap::Parser;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

const TOPIC: &str = "events";
/// Small fetches, so that even a short log makes many batches (and snapshots).
const FETCH_MAX_BYTES: i32 = 2_048;

/// `--broker`, and where the snapshot lives.
#[derive(Debug, Parser)]
pub struct Args {
    #[command(flatten)]
    pub example: ExampleArgs,
    /// The snapshot file (default: next to an embedded log, or `./projection-snapshot.json`).
    #[arg(long)]
    pub snapshot: Option<PathBuf>,
}

/// The read model (events per user) and the positions it reflects, saved together.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub events_per_user: BTreeMap<String, u64>,
    /// Per partition: one past the last offset folded into `events_per_user`.
    pub next_offset: BTreeMap<i32, i64>,
}

impl Snapshot {
    /// Folds one batch in: the state and its position move together, in memory.
    pub fn apply(&mut self, batch: &Batch) {
        for record in &batch.records {
            if let Ok(event) = UserEvent::decode(&record.payload) {
                *self.events_per_user.entry(event.user_id).or_default() += 1;
            }
        }
        self.next_offset.insert(batch.partition, batch.next_offset);
    }

    /// The snapshot at `path`, or the empty model when there is none yet.
    pub fn load(path: &Path) -> anyhow::Result<Snapshot> {
        match std::fs::read(path) {
            Ok(bytes) => Ok(serde_json::from_slice(&bytes)?),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Snapshot::default()),
            Err(error) => Err(error.into()),
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    run(Args::parse()).await
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let broker = ExampleBroker::connect(&args.example).await?;
    let path = match (&args.snapshot, broker.embedded_dir()) {
        (Some(path), _) => path.clone(),
        (None, Some(dir)) => dir.join("projection-snapshot.json"),
        (None, None) => PathBuf::from("projection-snapshot.json"),
    };
    // Two runs, the second restoring what the first saved.
    for run in 1..=2 {
        if broker.is_embedded() {
            publish_some(&broker, 100).await?;
        }
        // Restore: the state and the positions it reflects, from one file.
        let mut snapshot = Snapshot::load(&path)?;
        println!("run {run}: restored positions {:?}", snapshot.next_offset);
        follow_to_end(&broker, &path, &mut snapshot).await?;
        let events: u64 = snapshot.events_per_user.values().sum();
        println!("run {run}: {events} events at {:?}", snapshot.next_offset);
    }
    broker.shutdown().await
}

/// Follows every partition from the snapshot's positions up to the log's end as it is now,
/// saving the snapshot after every batch.
async fn follow_to_end(
    broker: &ExampleBroker,
    path: &Path,
    snapshot: &mut Snapshot,
) -> anyhow::Result<()> {
    let topic = broker.client.topic(TOPIC).await?;
    let config = ConsumerConfig {
        max_bytes: FETCH_MAX_BYTES,
        ..ConsumerConfig::default()
    };
    for partition in topic.partitions().iter().map(|p| p.id) {
        let end = topic.high_watermark(partition).unwrap_or(0);
        let start = snapshot.next_offset.get(&partition).copied();
        let start = start.map_or(StartPosition::Earliest, StartPosition::At);
        let consumer = broker
            .client
            .consumer(TOPIC, partition, start, config.clone())
            .await?;
        let mut follow = consumer.follow();
        while follow.position() < end {
            let batch = follow.next_batch().await?;
            snapshot.apply(&batch);
            // One file for both: the old snapshot or the new one survives a crash, never a mix.
            durable_file::replace_async(path, serde_json::to_vec(snapshot)?).await?;
        }
    }
    Ok(())
}

/// Something to fold on a fresh embedded broker.
async fn publish_some(broker: &ExampleBroker, count: u64) -> anyhow::Result<()> {
    let producer = broker
        .client
        .producer(TOPIC, ProducerConfig::default())
        .await?;
    let publisher_id = Uuid::new_v4();
    let mut deliveries = Vec::new();
    for n in 0..count {
        let (user_id, seq) = (format!("user-{:03}", n % 10), n / 10);
        let event = UserEvent {
            publisher_id,
            user_id,
            seq,
            kind: EventKind::ViewedPage,
            at_ms: 0,
        };
        deliveries.push(producer.send(Some(event.key()), event.encode()).await?);
    }
    // `flush` sends what is still batched and waits until every delivery is settled; a settled
    // delivery may still be a failure, so ask each one.
    producer.flush().await?;
    for delivery in deliveries {
        delivery.await?;
    }
    Ok(())
}
