//! The smallest at-least-once consumer: follow a partition, **handle each batch, then save its
//! `next_offset`**, and resume from the saved position on the next start. Copy this; the
//! production version is `src/events/follow.rs` (every partition, order checks, retries, a clean
//! stop; `booblik_client::checkpointing::Checkpointer` is the same loop as a helper).
//!
//! Run: `cargo run --release -p booblik-samples --example follow_and_save` (an embedded broker),
//! or with `-- --broker host:port` against a running one.
//!
//! Why this order: a crash between handling and saving leaves the previous position saved, so
//! the restart handles that batch again — a duplicate, never a loss (at-least-once). Saving first
//! would turn the same crash into a batch skipped forever (at-most-once).

use std::path::PathBuf;

use booblik_client::{Batch, ConsumerConfig, ProducerConfig, StartPosition};
use booblik_offset_store::{FileOffsetStore, OffsetStore};
use booblik_samples::events::{EventKind, UserEvent};
use booblik_samples::support::example::{ExampleArgs, ExampleBroker};
use clap::Parser;
use uuid::Uuid;

const TOPIC: &str = "events";
const PARTITION: i32 = 0;
/// The name the position is saved under.
const CONSUMER: &str = "follow-and-save-example";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    run(ExampleArgs::parse()).await
}

pub async fn run(args: ExampleArgs) -> anyhow::Result<()> {
    let broker = ExampleBroker::connect(&args).await?;
    // Positions next to the embedded broker's log, or in ./offsets for a real broker.
    let dir = broker
        .embedded_dir()
        .map_or_else(|| PathBuf::from("offsets"), |dir| dir.join("offsets"));
    let store = FileOffsetStore::open(&dir).await?;

    // Two runs of the same consumer, the second resuming where the first saved.
    for run in 1..=2 {
        if broker.is_embedded() {
            publish_to_partition_0(&broker, if run == 1 { 20 } else { 5 }).await?;
        }
        // Bounded for the example: follow up to the end of the log as it is now.
        let end = broker.client.topic(TOPIC).await?.high_watermark(PARTITION);
        let end = end.unwrap_or(0);
        let saved = store.load(CONSUMER, TOPIC, PARTITION).await?;
        let start = saved.map_or(StartPosition::Earliest, StartPosition::At);
        println!("run {run}: starting at {start:?} (saved: {saved:?})");
        let consumer = broker
            .client
            .consumer(TOPIC, PARTITION, start, ConsumerConfig::default())
            .await?;
        let mut follow = consumer.follow();
        while follow.position() < end {
            let batch = follow.next_batch().await?; // a long poll: waits at the broker
            handle(&batch); // first handle …
            store // … then save: the order is the guarantee
                .save(CONSUMER, TOPIC, PARTITION, batch.next_offset)
                .await?;
        }
        println!("run {run}: saved position {}", follow.position());
    }
    broker.shutdown().await
}

/// The consumer's work: here, printing each event.
fn handle(batch: &Batch) {
    for record in &batch.records {
        match UserEvent::decode(&record.payload) {
            Ok(event) => println!("  {} {} #{}", record.offset, event.user_id, event.seq),
            Err(error) => println!("  {} not an event: {error}", record.offset),
        }
    }
}

/// Something to follow on a fresh embedded broker: `count` events of one user, so they all land
/// in one partition — partition 0 is where this example reads, so the user is picked to map there.
async fn publish_to_partition_0(broker: &ExampleBroker, count: u64) -> anyhow::Result<()> {
    let producer = broker
        .client
        .producer(TOPIC, ProducerConfig::default())
        .await?;
    let publisher_id = Uuid::new_v4();
    for seq in 0..count {
        let event = UserEvent {
            publisher_id,
            user_id: "user-000".into(),
            seq,
            kind: EventKind::ViewedPage,
            at_ms: 0,
        };
        let delivery = producer.send(Some(event.key()), event.encode()).await?;
        anyhow::ensure!(
            delivery.partition() == PARTITION,
            "user-000 is not in partition 0"
        );
    }
    producer.flush().await?;
    Ok(())
}
