//! Keyed events and per-key order: every event is sent with key = user id, so all of one user's
//! events land in one partition, in the order sent — the only order a log gives. Reading the
//! partitions back shows it. Copy this; the production version is `src/events/publisher.rs`
//! (a rate, deliveries awaited apart and bounded, stats).
//!
//! Run: `cargo run --release -p booblik-samples --example keyed_publisher` (an embedded broker),
//! or with `-- --broker host:port` against a running one.

use std::collections::BTreeMap;

use booblik_client::{ConsumerConfig, ProducerConfig, StartPosition};
use booblik_samples::events::{EventKind, UserEvent};
use booblik_samples::support::example::{ExampleArgs, ExampleBroker};
use clap::Parser;
use uuid::Uuid;

const TOPIC: &str = "events";
const USERS: u64 = 4;
const EVENTS_PER_USER: u64 = 5;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    run(ExampleArgs::parse()).await
}

pub async fn run(args: ExampleArgs) -> anyhow::Result<()> {
    let broker = ExampleBroker::connect(&args).await?;
    let producer = broker
        .client
        .producer(TOPIC, ProducerConfig::default())
        .await?;

    // Send: key = user id. `send` queues the record; the delivery resolves to its offset.
    let publisher_id = Uuid::new_v4();
    let mut deliveries = Vec::new();
    for seq in 0..EVENTS_PER_USER {
        for user in 0..USERS {
            let event = UserEvent {
                publisher_id,
                user_id: format!("user-{user:03}"),
                seq,
                kind: EventKind::ViewedPage,
                at_ms: 0,
            };
            let delivery = producer.send(Some(event.key()), event.encode()).await?;
            deliveries.push((delivery.partition(), delivery));
        }
    }
    producer.flush().await?;
    // One past the last offset this run wrote, per partition: where reading back stops.
    let mut end = BTreeMap::new();
    for (partition, delivery) in deliveries {
        let offset = delivery.await?.expect("ack WRITTEN returns the offset");
        let next = end.entry(partition).or_insert(0);
        *next = (*next).max(offset + 1);
    }

    // Read back, per partition, in offset order: this run's events of one user are all in one
    // partition, and their `seq` goes up by one.
    for (&partition, &end_offset) in &end {
        let consumer = broker
            .client
            .consumer(
                TOPIC,
                partition,
                StartPosition::Earliest,
                ConsumerConfig::default(),
            )
            .await?;
        let mut replay = consumer.replay().await?;
        let mut seqs: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        while let Some(batch) = replay.next_batch().await? {
            for record in batch.records.iter().filter(|r| r.offset < end_offset) {
                // The topic may hold records that are not events (another program wrote them):
                // skip them, as every reader of a shared log must, rather than stop here.
                let Ok(event) = UserEvent::decode(&record.payload) else {
                    continue;
                };
                if event.publisher_id == publisher_id {
                    seqs.entry(event.user_id).or_default().push(event.seq);
                }
            }
        }
        for (user, seqs) in seqs {
            let in_order = seqs.windows(2).all(|pair| pair[1] == pair[0] + 1);
            anyhow::ensure!(
                in_order,
                "{user}: seq out of order in partition {partition}"
            );
            println!("partition {partition}: {user} seq {seqs:?} in order");
        }
    }
    println!(
        "{} events of {USERS} users: each user in one partition, in the order sent",
        USERS * EVENTS_PER_USER
    );
    broker.shutdown().await
}
