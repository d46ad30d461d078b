//! `--bench-records N`: the relay's throughput beside each side's own produce rate, from one
//! invocation, so the three figures share a machine, a moment and a batch size.
//!
//! ```text
//!   1. produce N records per partition into the SOURCE   → source produce records/s
//!   2. relay them to the end (--exit-when-caught-up)     → relay records/s
//!   3. produce N records per partition into the TARGET   → target produce records/s
//! ```
//!
//! Each side is written the way the relay writes: one task per partition, batches of the
//! relay's size, booblik at FORCED (the relay's target acknowledgement), JetStream with a PubAck
//! per record, Kafka with the relay's idempotent acks=all producer. Step 3 writes plain records into the target, so the target is no longer a pure
//! mirror afterwards (a later relay into a JetStream target refuses its tail): **scratch topics
//! only**.

use std::time::Instant;

use bytes::Bytes;
use serde::Serialize;

use super::{Endpoint, Side};
use crate::engine::Ack;

/// Bytes of each benchmark record (about an event of the events sample).
pub const BENCH_RECORD_BYTES: usize = 100;

/// The three figures.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct BenchFigures {
    /// Records per partition produced into each side.
    pub records_per_partition: u64,
    /// Partitions.
    pub partitions: i32,
    /// Records per batch (produce and relay alike).
    pub batch_records: usize,
    /// Producing into the source.
    pub source_produce_records_per_s: f64,
    /// Relaying (from the summary of the relay run).
    pub relay_records_per_s: f64,
    /// Producing into the target.
    pub target_produce_records_per_s: f64,
}

/// Produces `records` records into every partition of `endpoint` (opened as `side`; one task
/// each) in batches of `batch`, and returns the records per second over all partitions.
pub async fn produce(
    endpoint: &Endpoint,
    side: &Side,
    partitions: i32,
    records: u64,
    batch: usize,
) -> anyhow::Result<f64> {
    #[cfg(feature = "kafka")]
    if let Side::Kafka(brokers) = side {
        return produce_kafka(brokers, endpoint.topic(), partitions, records, batch).await;
    }
    let mut logs = Vec::new();
    for p in 0..partitions {
        logs.push(side.engine()?.open(endpoint.topic(), p).await?);
    }
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for (p, log) in logs.into_iter().enumerate() {
        tasks.spawn(async move {
            let mut n = 0u64;
            while n < records {
                let count = (records - n).min(batch as u64);
                let batch: Vec<Bytes> = (n..n + count).map(|i| record(p, i)).collect();
                log.append(&batch, Ack::Forced).await?;
                n += count;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    let elapsed = started.elapsed().as_secs_f64().max(1e-9);
    Ok((records * partitions as u64) as f64 / elapsed)
}

/// Into Kafka the relay's way: its idempotent acks=all producer, `batch` sends in flight per
/// partition before their deliveries are awaited (one task per partition).
#[cfg(feature = "kafka")]
async fn produce_kafka(
    brokers: &str,
    topic: &str,
    partitions: i32,
    records: u64,
    batch: usize,
) -> anyhow::Result<f64> {
    let producer = super::kafka::producer(brokers)?;
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for p in 0..partitions {
        let (producer, topic) = (producer.clone(), topic.to_owned());
        tasks.spawn(async move {
            let mut n = 0u64;
            while n < records {
                let count = (records - n).min(batch as u64);
                let values: Vec<Bytes> = (n..n + count).map(|i| record(p as usize, i)).collect();
                let mut pending = Vec::with_capacity(values.len());
                for value in &values {
                    let message = rdkafka::producer::FutureRecord::<(), [u8]>::to(&topic)
                        .partition(p)
                        .payload(&value[..]);
                    pending.push(producer.send_result(message).map_err(|(e, _)| e)?);
                }
                for delivery in pending {
                    delivery.await?.map_err(|(e, _)| e)?;
                }
                n += count;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    let elapsed = started.elapsed().as_secs_f64().max(1e-9);
    Ok((records * partitions as u64) as f64 / elapsed)
}

fn record(partition: usize, n: u64) -> Bytes {
    let mut text = format!("bench-p{partition}-{n:012}-");
    text.extend(std::iter::repeat_n(
        'x',
        BENCH_RECORD_BYTES.saturating_sub(text.len()),
    ));
    Bytes::from(text)
}
