//! The shipped image, as users run it: the static broker in the `FROM scratch` container
//! becomes healthy through its own `health` subcommand, takes keyed records from the batching
//! producer, gives them back whole and in order through `replay()`, and wakes a `follow()` for a
//! record produced later — all across the container's published port.

mod container_support;

use std::collections::BTreeMap;
use std::time::Duration;

use booblik_client::{ConsumerConfig, ProducerConfig, StartPosition};
use container_support::{STEP_WITHIN_MS, broker_request, connect_when_ready, start, within};

/// Partitions of the topic the test creates.
const PARTITIONS: i32 = 3;
/// Records produced before reading them back.
const RECORDS: usize = 300;
/// Distinct keys, so every partition gets records.
const USERS: usize = 12;

#[tokio::test]
#[ignore = "needs Docker and the booblik image; run by .ci/extra"]
async fn the_broker_image_serves_produce_replay_and_follow() {
    let container = start(broker_request(&format!("events:{PARTITIONS}"), None)).await;
    let client = connect_when_ready(&container).await;
    let producer = client
        .producer("events", ProducerConfig::default())
        .await
        .unwrap();

    let mut sent: BTreeMap<i32, Vec<Vec<u8>>> = BTreeMap::new();
    let mut deliveries = Vec::new();
    for n in 0..RECORDS {
        let key = format!("user-{}", n % USERS);
        let payload = format!("{key} event {n}").into_bytes();
        let delivery = producer
            .send(Some(key.as_bytes()), payload.clone())
            .await
            .unwrap();
        sent.entry(delivery.partition()).or_default().push(payload);
        deliveries.push(delivery);
    }
    producer.flush().await.unwrap();
    for delivery in deliveries {
        let offset = within(STEP_WITHIN_MS, "a delivery", delivery)
            .await
            .unwrap();
        assert!(offset.is_some(), "ack WRITTEN answers with the offset");
    }
    assert!(sent.len() > 1, "keys spread over several partitions");

    for partition in 0..PARTITIONS {
        let consumer = client
            .consumer(
                "events",
                partition,
                StartPosition::Earliest,
                ConsumerConfig::default(),
            )
            .await
            .unwrap();
        let mut replay = consumer.replay().await.unwrap();
        let mut read = Vec::new();
        while let Some(batch) = within(STEP_WITHIN_MS, "a replay batch", replay.next_batch())
            .await
            .unwrap()
        {
            for record in &batch.records {
                assert_eq!(record.offset, read.len() as i64, "offsets are gap-free");
                read.push(record.payload.to_vec());
            }
        }
        assert_eq!(
            read,
            sent.remove(&partition).unwrap_or_default(),
            "partition {partition} reads back what was produced, in order"
        );
    }

    let mut follow = client
        .consumer(
            "events",
            0,
            StartPosition::Latest,
            ConsumerConfig {
                max_wait_ms: 30_000,
                ..ConsumerConfig::default()
            },
        )
        .await
        .unwrap()
        .follow();
    let late = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        producer.send_to(0, "late").await.unwrap().await.unwrap()
    };
    let (batch, offset) = within(STEP_WITHIN_MS, "the follower to wake", async {
        tokio::join!(follow.next_batch(), late)
    })
    .await;
    let batch = batch.unwrap();
    assert_eq!(
        batch.records.len(),
        1,
        "the follower got exactly the late record"
    );
    assert_eq!(Some(batch.records[0].offset), offset);
    assert_eq!(&batch.records[0].payload[..], b"late");
}
