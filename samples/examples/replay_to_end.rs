//! Replay: read each partition's history from its first record to the high watermark seen when
//! the replay starts, then stop — even while writers keep writing. Copy this; the production
//! version is `src/events/replay.rs` (retries, a summary with per-user order checks).
//!
//! Run: `cargo run --release -p booblik-samples --example replay_to_end` (an embedded broker),
//! or with `-- --broker host:port` against a running one.

use std::collections::BTreeMap;

use booblik_client::{ConsumerConfig, ProducerConfig, StartPosition};
use booblik_samples::events::{EventKind, UserEvent};
use booblik_samples::support::example::{ExampleArgs, ExampleBroker};
use clap::Parser;
use uuid::Uuid;

const TOPIC: &str = "events";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    run(ExampleArgs::parse()).await
}

pub async fn run(args: ExampleArgs) -> anyhow::Result<()> {
    let broker = ExampleBroker::connect(&args).await?;
    if broker.is_embedded() {
        publish_some(&broker, 50).await?;
    }
    let partitions = broker.client.topic(TOPIC).await?.partition_count() as i32;
    let mut total = 0;
    for partition in 0..partitions {
        let consumer = broker
            .client
            .consumer(
                TOPIC,
                partition,
                StartPosition::Earliest,
                ConsumerConfig::default(),
            )
            .await?;
        // `replay()` fixes its end now: the high watermark. Records written later are not read,
        // so the replay finishes however busy the writers are.
        let mut replay = consumer.replay().await?;
        let end_offset = replay.end_offset();
        let mut per_user: BTreeMap<String, u64> = BTreeMap::new();
        let mut records = 0;
        while let Some(batch) = replay.next_batch().await? {
            for record in &batch.records {
                records += 1;
                if let Ok(event) = UserEvent::decode(&record.payload) {
                    *per_user.entry(event.user_id).or_default() += 1;
                }
            }
        }
        total += records;
        println!(
            "partition {partition}: {records} records up to offset {end_offset}, {} users",
            per_user.len()
        );
    }
    println!("replayed {total} records to the end");
    broker.shutdown().await
}

/// Something to replay on a fresh embedded broker.
async fn publish_some(broker: &ExampleBroker, count: u64) -> anyhow::Result<()> {
    let producer = broker
        .client
        .producer(TOPIC, ProducerConfig::default())
        .await?;
    let publisher_id = Uuid::new_v4();
    let mut deliveries = Vec::new();
    for n in 0..count {
        let event = UserEvent {
            publisher_id,
            user_id: format!("user-{:03}", n % 7),
            seq: n / 7,
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
