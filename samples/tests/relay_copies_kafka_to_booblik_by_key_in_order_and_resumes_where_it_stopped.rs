//! Kafka → booblik: the relay binary copies a Kafka topic of 3 partitions into a booblik topic
//! of 2; each record lands in the partition booblik's shared FNV-1a partitioner gives its key
//! (the key itself is dropped, decision R12), once, and every key's records keep their order.
//! The position is Kafka's own, committed to the consumer group for partitions the relay
//! assigned itself: run again, it starts at the committed offsets and relays nothing more.
//! Kafka is a `tansu` broker started here (`booblik_samples::support::tansu` says how to
//! install it; without it the test fails).
//!
//! `cargo test -p booblik-samples --features kafka --test relay_copies_kafka_to_booblik_by_key_in_order_and_resumes_where_it_stopped -- --ignored`

#![cfg(feature = "kafka")]

mod relay_support;

use std::collections::BTreeMap;

use booblik_samples::engine::LogEngine;
use bytes::Bytes;
use relay_support::{
    booblik, kafka, read_all, relay_args, run_again_relays_nothing, run_to_end, start_broker,
};

const KAFKA_PARTITIONS: i32 = 3;
const BOOBLIK_PARTITIONS: u32 = 2;
const KEYS: u64 = 40;
const PER_KEY: u64 = 30;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Kafka broker (tansu); run by .ci/run with --features kafka -- --ignored"]
async fn the_relay_copies_kafka_into_booblik_by_key_once_and_in_each_key_s_order() {
    let dir = tempfile::tempdir().unwrap();
    let broker = kafka::start_with_topic(dir.path(), "events", KAFKA_PARTITIONS).await;
    let producer = kafka::producer(broker.addr());
    // Key k lives in Kafka partition k mod 3 (as a Kafka producer's own partitioner would pin
    // it somewhere); records of different keys interleave.
    let records: Vec<_> = (0..PER_KEY)
        .flat_map(|n| {
            (0..KEYS).map(move |k| {
                let key = format!("user-{k}").into_bytes();
                let value = Bytes::from(format!("user-{k}:{n}"));
                ((k % KAFKA_PARTITIONS as u64) as i32, Some(key), value)
            })
        })
        .collect();
    kafka::send_all(&producer, "events", &records).await;
    let target = start_broker(&dir.path().join("b"), "mirror:2").await;
    let engine = booblik(&target).await;

    let args = relay_args(
        dir.path(),
        &format!("kafka://{}/events", broker.addr()),
        &format!("booblik://{}/mirror", target.local_addr()),
        &["--batch-max-records", "100"],
    );
    let (first, _) = run_to_end(dir.path(), 0, &args).await;
    assert_eq!(first.relayed, KEYS * PER_KEY, "{first:?}");
    assert_eq!(first.duplicates_total, 0, "{first:?}");

    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    let mut total = 0;
    for p in 0..BOOBLIK_PARTITIONS as i32 {
        let log = engine.open("mirror", p).await.unwrap();
        for bytes in read_all(log.as_ref()).await {
            let text = std::str::from_utf8(&bytes).unwrap();
            let (key, n) = text.split_once(':').unwrap();
            let expected = booblik_protocol::partition_for_key(key.as_bytes(), BOOBLIK_PARTITIONS);
            assert_eq!(p as u32, expected, "{text} in partition {p}");
            let next = seen.entry(key.to_owned()).or_default();
            assert_eq!(
                n.parse::<u64>().unwrap(),
                *next,
                "{key}: out of order or duplicated"
            );
            *next += 1;
            total += 1;
        }
    }
    assert_eq!(total, KEYS * PER_KEY);
    assert!(seen.values().all(|n| *n == PER_KEY), "{seen:?}");

    // Kafka partition q holds the keys k with k mod 3 = q, each PER_KEY times.
    let committed: Vec<i64> = (0..KAFKA_PARTITIONS as u64)
        .map(|q| {
            ((0..KEYS)
                .filter(|k| k % KAFKA_PARTITIONS as u64 == q)
                .count() as u64
                * PER_KEY) as i64
        })
        .collect();
    run_again_relays_nothing(dir.path(), &args, &committed).await;
}
