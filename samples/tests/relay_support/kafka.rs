//! The Kafka side of the relay tests: a broker (tansu, started here; see
//! `booblik_samples::support::tansu`), topics, a producer and a full read of a partition.

use std::time::Duration;

use booblik_samples::support::tansu::Kafka;
use bytes::Bytes;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};

use super::{PARTITIONS, Producer, payload};

/// The broker, its data under `dir/kafka`, or a failure saying how to install one: never a
/// silent pass.
pub fn start(dir: &std::path::Path) -> Kafka {
    Kafka::start(&dir.join("kafka")).unwrap_or_else(|error| panic!("{error:#}"))
}

/// [`start`], with `topic` of `partitions` partitions created.
pub async fn start_with_topic(dir: &std::path::Path, topic: &str, partitions: i32) -> Kafka {
    let broker = start(dir);
    create_topic(broker.addr(), topic, partitions).await;
    broker
}

fn config(addr: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", addr);
    config
}

/// Creates `topic` with `partitions` partitions.
pub async fn create_topic(addr: &str, topic: &str, partitions: i32) {
    let admin: AdminClient<DefaultClientContext> = config(addr).create().unwrap();
    let results = admin
        .create_topics(
            &[NewTopic::new(topic, partitions, TopicReplication::Fixed(1))],
            &AdminOptions::new().operation_timeout(Some(Duration::from_secs(10))),
        )
        .await
        .expect("CreateTopics answers");
    for result in results {
        result.unwrap_or_else(|(topic, code)| panic!("cannot create {topic}: {code:?}"));
    }
}

/// A producer for the tests' own records (acks=all).
pub fn producer(addr: &str) -> FutureProducer {
    config(addr)
        .set("acks", "all")
        .set("linger.ms", "2")
        .create()
        .unwrap()
}

/// Sends one record and waits for its acknowledgement... in bulk: all of `records` first.
pub async fn send_all(
    producer: &FutureProducer,
    topic: &str,
    records: &[(i32, Option<Vec<u8>>, Bytes)],
) {
    let mut pending = Vec::new();
    for (partition, key, value) in records {
        let mut record = FutureRecord::<[u8], [u8]>::to(topic)
            .partition(*partition)
            .payload(&value[..]);
        if let Some(key) = key {
            record = record.key(&key[..]);
        }
        pending.push(producer.send_result(record).map_err(|(e, _)| e).unwrap());
    }
    for delivery in pending {
        delivery.await.unwrap().map_err(|(e, _)| e).unwrap();
    }
}

/// Produces keyless records `payload(p, n)` into every partition p, 20 per partition every
/// 10 ms, until stopped; [`Producer::stop`] returns how many each partition got.
pub fn produce_until(addr: &str, topic: &str) -> Producer {
    let producer = producer(addr);
    let topic = topic.to_owned();
    Producer::spawn(|stop| async move {
        let mut n = 0u64;
        while !stop.is_triggered() {
            let records: Vec<_> = (0..PARTITIONS)
                .flat_map(|p| (n..n + 20).map(move |i| (p, None, payload(p, i))))
                .collect();
            send_all(&producer, &topic, &records).await;
            n += 20;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        n
    })
}

/// One record read back.
#[derive(Debug, Clone)]
pub struct Read {
    /// Its offset.
    pub offset: i64,
    /// Its key.
    pub key: Option<Vec<u8>>,
    /// Its value.
    pub payload: Bytes,
    /// Its headers, as text.
    pub headers: Vec<(String, String)>,
}

/// Every record of `topic`'s `partition`, in order: read until a second passes without one
/// (tansu 0.6.0's high watermark stops at the last batch's base offset + 1, short of the end).
pub async fn read_all(addr: &str, topic: &str, partition: i32) -> Vec<Read> {
    let (addr, topic) = (addr.to_owned(), topic.to_owned());
    tokio::task::spawn_blocking(move || {
        use rdkafka::message::Headers;
        let consumer: BaseConsumer = config(&addr)
            .set("group.id", "booblik-test-read")
            .set("enable.auto.commit", "false")
            .create()
            .unwrap();
        let (low, high) = consumer
            .fetch_watermarks(&topic, partition, Duration::from_secs(10))
            .unwrap();
        let mut out = Vec::new();
        if high <= low {
            return out;
        }
        let mut list = TopicPartitionList::new();
        list.add_partition_offset(&topic, partition, Offset::Offset(low))
            .unwrap();
        consumer.assign(&list).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_mins(1);
        let mut idle = 0;
        while idle < 5 {
            assert!(
                std::time::Instant::now() < deadline,
                "{topic}/{partition}: read {} records of {low}..{high} in 60 s",
                out.len()
            );
            let Some(message) = consumer.poll(Duration::from_millis(200)) else {
                idle += 1;
                continue;
            };
            let message = message.unwrap();
            let headers = message
                .headers()
                .map(|h| {
                    h.iter()
                        .map(|h| {
                            let value = h.value.map(String::from_utf8_lossy).unwrap_or_default();
                            (h.key.to_owned(), value.into_owned())
                        })
                        .collect()
                })
                .unwrap_or_default();
            out.push(Read {
                offset: message.offset(),
                key: message.key().map(<[u8]>::to_vec),
                payload: Bytes::copy_from_slice(message.payload().unwrap_or_default()),
                headers,
            });
        }
        out
    })
    .await
    .unwrap()
}
