//! Against the real broker: keyed records produced through the batching producer land on their
//! golden-vector partitions in order, `replay()` reads them back whole and CRC-verified up to
//! the high watermark, and `follow()` wakes for a record produced later.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use booblik_client::{Client, ConsumerConfig, ProducerConfig, StartPosition};
use support::real_broker::RealBroker;
use support::{test_config, within};

/// Keys and their partitions among three, from the golden vectors (p3).
const KEYS: [(&str, i32); 4] = [("user-1", 1), ("user-2", 1), ("\u{7f}", 0), ("\u{ff}", 0)];

#[tokio::test]
async fn keyed_records_come_back_in_order_from_their_partitions() {
    let broker = RealBroker::start("events:3").await;
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    let producer = client
        .producer("events", ProducerConfig::default())
        .await
        .unwrap();

    let mut sent: BTreeMap<i32, Vec<Vec<u8>>> = BTreeMap::new();
    let mut deliveries = Vec::new();
    for round in 0..25 {
        for (key, partition) in KEYS {
            let key = key.as_bytes();
            let payload = format!("{}#{round}", String::from_utf8_lossy(key)).into_bytes();
            let delivery = producer.send(Some(key), payload.clone()).await.unwrap();
            // "\u{7f}" is the single byte 0x7f, but "\u{ff}" is UTF-8 c3 bf: check the vector
            // partitions only for the ASCII keys, the rest by the client's own choice.
            if key.is_ascii() {
                assert_eq!(delivery.partition(), partition, "key {key:?}");
            }
            sent.entry(delivery.partition()).or_default().push(payload);
            deliveries.push(delivery);
        }
    }
    producer.flush().await.unwrap();
    for delivery in deliveries {
        assert!(within("a delivery", delivery).await.unwrap().is_some());
    }

    for partition in 0..3 {
        let config = ConsumerConfig {
            max_bytes: 256, // many small fetches, each ending mid-record
            ..ConsumerConfig::default()
        };
        let consumer = client
            .consumer("events", partition, StartPosition::Earliest, config)
            .await
            .unwrap();
        let mut replay = consumer.replay().await.unwrap();
        let mut read = Vec::new();
        let mut next_offset = 0;
        while let Some(batch) = within("a replay batch", replay.next_batch()).await.unwrap() {
            for record in &batch.records {
                assert_eq!(record.offset, next_offset, "offsets are gap-free");
                next_offset += 1;
                read.push(record.payload.to_vec());
            }
        }
        assert_eq!(
            read,
            sent.remove(&partition).unwrap_or_default(),
            "partition {partition}"
        );
    }
    broker.stop().await;
}

#[tokio::test]
async fn a_follower_wakes_for_a_record_produced_later() {
    let broker = RealBroker::start("events:1").await;
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    let producer = client
        .producer("events", ProducerConfig::default())
        .await
        .unwrap();
    within(
        "the first record",
        producer.send_to(0, "before").await.unwrap(),
    )
    .await
    .unwrap();
    let config = ConsumerConfig {
        max_wait_ms: 60_000,
        ..ConsumerConfig::default()
    };
    let mut follow = client
        .consumer("events", 0, StartPosition::Latest, config)
        .await
        .unwrap()
        .follow();

    let mut next = Box::pin(follow.next_batch());
    // Still waiting before the produce: a batch now ("before" again) would make the wake-up
    // below prove nothing.
    let early = tokio::time::timeout(Duration::from_millis(200), next.as_mut()).await;
    assert!(early.is_err(), "answered before the produce: {early:?}");
    let late = async { producer.send_to(0, "after").await.unwrap().await.unwrap() };
    let (batch, offset) = within("a follow batch", async { tokio::join!(next, late) }).await;
    let batch = batch.unwrap();

    assert_eq!(offset, Some(1));
    assert_eq!(batch.records.len(), 1);
    assert_eq!(batch.records[0].offset, 1);
    assert_eq!(&batch.records[0].payload[..], b"after");
    broker.stop().await;
}
