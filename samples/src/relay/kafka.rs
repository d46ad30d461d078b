//! The Kafka side (cargo feature `kafka`, over `rdkafka` with its bundled librdkafka).
//!
//! Two directions, and in each the position lives somewhere else:
//!
//! * **into Kafka** ([`KafkaTarget`], from booblik or JetStream): partition p goes to partition
//!   p. Every record carries its source position in headers (`Booblik-Relay-Source`,
//!   `Booblik-Relay-Offset`, the same as into JetStream); a restarting relay reads the last
//!   record of the target partition and resumes after the offset it names. The source position
//!   also lives in the `FileOffsetStore`, as for every booblik or JetStream reader; the tail
//!   read is what makes a crash between the acknowledgement and the save cost nothing. The
//!   producer is idempotent, which keeps one session's records in order without gaps through
//!   retries; it deduplicates only within that session, so nothing counts on it across a
//!   restart.
//! * **out of Kafka** ([`relay_into_booblik`]): the position is Kafka's own, committed to the
//!   consumer group `--consumer-name` for partitions the relay **assigns itself** (no group
//!   membership, no rebalance: `assign` + `commit`). The Kafka key picks the booblik partition
//!   with booblik's shared FNV-1a partitioner and is then dropped (decision R12): a key's
//!   records stay in one partition, in order. A keyless record goes to partition
//!   `kafka partition mod booblik partitions`, so keyless records keep their Kafka partition's
//!   order too. What booblik does not keep: the key bytes, the headers, the timestamps.
//!
//! Out of Kafka one task relays the whole topic (every assigned partition through one consumer),
//! so the relay is the only writer of the target topic while it runs and a single intent
//! ([`KeyedIntent`]) covers the one batch that can be in flight: a batch is read across Kafka
//! partitions, split by target partition, announced, appended (one append per target partition,
//! FORCED), then committed. A crash between the appends and the commit re-reads the batch; the
//! restart counts what landed from each target partition's growth, exactly, and never silently.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use async_trait::async_trait;
use booblik_client::Partitioner;
use bytes::Bytes;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, StreamConsumer};
use rdkafka::message::{Header, Headers, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use serde::{Deserialize, Serialize};

use super::RelayConfig;
use super::intent::INTENT_DIR;
use super::summary::{Counters, Summary};
use super::target::{Recovery, TargetPartition};
use super::target_jetstream::{OFFSET_HEADER, SOURCE_HEADER};
use crate::engine::{Ack, LogEngine, LogRecord, PartitionLog};
use crate::support::shutdown::Shutdown;

/// How long one Kafka metadata, watermark, offset-fetch or commit request may take.
pub const KAFKA_REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// Out of Kafka: how long a batch waits for more records once its first one arrived.
pub const BATCH_FILL_WAIT: Duration = Duration::from_millis(20);
/// Out of Kafka: how long a read waits for a first record before checking the stop signal and
/// `--exit-when-caught-up` again.
pub const IDLE_WAIT: Duration = Duration::from_millis(500);
/// Reading a partition's tail: how long no further record must arrive before the last one seen
/// is taken as the last.
pub const TAIL_QUIET: Duration = Duration::from_millis(300);

/// The client settings every Kafka client of the relay starts from.
fn client_config(brokers: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", brokers)
        .set("client.id", "booblik-relay")
        // The relay names every partition itself: never create a topic by asking for it.
        .set("allow.auto.create.topics", "false");
    config
}

/// Runs a blocking librdkafka call (metadata, watermarks, offsets, commit) off the async
/// workers' hot path. The binary's runtime is multi-threaded.
fn blocking<T>(call: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(call)
}

/// How many partitions the Kafka topic has (an error when it does not exist).
pub fn partition_count(brokers: &str, topic: &str) -> anyhow::Result<i32> {
    let consumer: BaseConsumer = client_config(brokers).create()?;
    let metadata = blocking(|| consumer.fetch_metadata(Some(topic), KAFKA_REQUEST_TIMEOUT))
        .with_context(|| format!("kafka://{brokers}: no metadata for {topic}"))?;
    let Some(found) = metadata.topics().iter().find(|t| t.name() == topic) else {
        bail!("kafka://{brokers}: no topic {topic}");
    };
    if let Some(error) = found.error() {
        bail!("kafka://{brokers}/{topic}: {error:?}");
    }
    if found.partitions().is_empty() {
        bail!("kafka://{brokers}/{topic}: no partitions");
    }
    Ok(found.partitions().len() as i32)
}

/// The idempotent, acks=all producer of the relay (and of `--bench-records` into Kafka).
pub fn producer(brokers: &str) -> anyhow::Result<FutureProducer> {
    Ok(client_config(brokers)
        .set("acks", "all")
        // In order, without gaps, through retries (within this session only; see the module).
        .set("enable.idempotence", "false")
        .set("max.in.flight.requests.per.connection", "1")
        .set("linger.ms", "5")
        .create()?)
}

// ------------------------------------------------------------------------------------------
// Into Kafka
// ------------------------------------------------------------------------------------------

/// A Kafka partition written by the relay.
pub struct KafkaTarget {
    producer: FutureProducer,
    brokers: String,
    topic: String,
    partition: i32,
    /// `topic/partition` of the source.
    source: String,
}

impl fmt::Debug for KafkaTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KafkaTarget")
            .field("brokers", &self.brokers)
            .field("topic", &self.topic)
            .field("partition", &self.partition)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl KafkaTarget {
    /// Writes partition `partition` of `topic` through `producer`, records coming from `source`
    /// (`topic/partition`).
    pub fn new(
        producer: FutureProducer,
        brokers: &str,
        topic: &str,
        partition: i32,
        source: String,
    ) -> Self {
        Self {
            producer,
            brokers: brokers.to_owned(),
            topic: topic.to_owned(),
            partition,
            source,
        }
    }

    /// The headers of the partition's last record, or `None` when it is empty.
    fn tail_headers(&self) -> anyhow::Result<Option<(i64, BTreeMap<String, String>)>> {
        // A group id librdkafka wants for any consumer; never joined (assign) nor committed.
        let consumer: BaseConsumer = client_config(&self.brokers)
            .set("group.id", "booblik-relay-tail-read")
            .set("enable.auto.commit", "false")
            .create()?;
        let (low, high) = consumer
            .fetch_watermarks(&self.topic, self.partition, KAFKA_REQUEST_TIMEOUT)
            .with_context(|| {
                format!(
                    "cannot read the bounds of {}/{}",
                    self.topic, self.partition
                )
            })?;
        if high <= low {
            return Ok(None);
        }
        // Read from `high - 1` forward until the partition stays quiet, and keep the last
        // record seen. On Kafka that is the one record at `high - 1`. tansu 0.6.0 reports the
        // base offset of the last *batch* + 1 as the high watermark, so there the last record
        // lies further on: reading to the quiet end finds it on both.
        let mut assignment = TopicPartitionList::new();
        assignment.add_partition_offset(&self.topic, self.partition, Offset::Offset(high - 1))?;
        consumer.assign(&assignment)?;
        let deadline = Instant::now() + KAFKA_REQUEST_TIMEOUT;
        let mut last = None;
        loop {
            match consumer.poll(TAIL_QUIET) {
                Some(message) => {
                    let message = message?;
                    let mut headers = BTreeMap::new();
                    if let Some(all) = message.headers() {
                        for header in all.iter() {
                            if let Some(value) = header.value {
                                headers.insert(
                                    header.key.to_owned(),
                                    String::from_utf8_lossy(value).into_owned(),
                                );
                            }
                        }
                    }
                    last = Some((message.offset(), headers));
                }
                None if last.is_some() => return Ok(last),
                None => {}
            }
            if Instant::now() > deadline {
                bail!(
                    "cannot read the last record (at {} or after) of {}/{} within {KAFKA_REQUEST_TIMEOUT:?}",
                    high - 1,
                    self.topic,
                    self.partition
                );
            }
        }
    }
}

#[async_trait]
impl TargetPartition for KafkaTarget {
    async fn recover(&self, saved: i64) -> anyhow::Result<Recovery> {
        let clean = Recovery {
            resume_at: saved,
            duplicates: 0,
            duplicates_total: 0,
        };
        let Some((offset, headers)) = blocking(|| self.tail_headers())? else {
            return Ok(clean);
        };
        let name = format!("{}/{}", self.topic, self.partition);
        // The same refusal as into JetStream: a tail that is not ours cannot say where to resume.
        if headers.get(SOURCE_HEADER).map(String::as_str) != Some(self.source.as_str()) {
            bail!(
                "the last record of kafka {name} (offset {offset}) was not relayed from {} (its {SOURCE_HEADER} is {:?}); refusing to mix sources",
                self.source,
                headers.get(SOURCE_HEADER)
            );
        }
        let relayed: i64 = headers
            .get(OFFSET_HEADER)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| {
                anyhow::anyhow!("the last record of kafka {name} has no {OFFSET_HEADER}")
            })?;
        let resume_at = saved.max(relayed + 1);
        if resume_at > saved {
            tracing::info!(
                partition = %self.source,
                saved,
                resume_at,
                "the target holds records past the saved position: resuming after its tail"
            );
        }
        Ok(Recovery { resume_at, ..clean })
    }

    async fn write(&self, records: &[LogRecord]) -> anyhow::Result<u64> {
        // All sends first, then all deliveries: librdkafka batches them into few requests.
        let mut pending = Vec::with_capacity(records.len());
        for record in records {
            let offset = record.offset.to_string();
            let headers = OwnedHeaders::new_with_capacity(2)
                .insert(Header {
                    key: SOURCE_HEADER,
                    value: Some(self.source.as_bytes()),
                })
                .insert(Header {
                    key: OFFSET_HEADER,
                    value: Some(offset.as_bytes()),
                });
            let message = FutureRecord::<(), [u8]>::to(&self.topic)
                .partition(self.partition)
                .payload(&record.payload[..])
                .headers(headers);
            match self.producer.send_result(message) {
                Ok(delivery) => pending.push(delivery),
                Err((error, _)) => bail!(
                    "cannot send to kafka {}/{}: {error}",
                    self.topic,
                    self.partition
                ),
            }
        }
        for delivery in pending {
            match delivery.await {
                Ok(Ok(_)) => {}
                Ok(Err((error, _))) => {
                    bail!(
                        "kafka {}/{} refused a record: {error}",
                        self.topic,
                        self.partition
                    )
                }
                Err(_) => bail!("the kafka producer stopped before delivering"),
            }
        }
        Ok(0)
    }
}

// ------------------------------------------------------------------------------------------
// Out of Kafka, into booblik
// ------------------------------------------------------------------------------------------

/// One target partition's share of a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetShare {
    /// The booblik partition.
    pub partition: i32,
    /// Its end (high watermark) just before the append.
    pub end_before: i64,
    /// Records appended to it (one append: it lands whole or not at all).
    pub records: i64,
    /// Of those, how many came from each Kafka partition.
    pub from_sources: BTreeMap<i32, i64>,
}

/// The intent of a Kafka → booblik relay: the batch about to be appended, saved before the
/// appends (see [`super::intent`] for the one-partition version and the reasoning).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyedIntent {
    /// The Kafka position each source partition reaches once this batch is committed.
    pub commits: BTreeMap<i32, i64>,
    /// What each target partition gets.
    pub shares: Vec<TargetShare>,
    /// Duplicates counted by every restart so far, by Kafka partition.
    pub duplicates_counted: BTreeMap<i32, u64>,
}

impl KeyedIntent {
    /// The records of this batch already in the target although Kafka's committed positions
    /// do not cover them, by Kafka partition, given the target ends now and the committed
    /// positions.
    pub fn possible_duplicates(
        &self,
        committed: &BTreeMap<i32, i64>,
        ends_now: &BTreeMap<i32, i64>,
    ) -> BTreeMap<i32, u64> {
        let mut found = BTreeMap::new();
        let clean = self
            .commits
            .iter()
            .all(|(q, to)| committed.get(q).is_some_and(|at| at >= to));
        if clean {
            return found;
        }
        for share in &self.shares {
            let grown = ends_now
                .get(&share.partition)
                .copied()
                .unwrap_or(share.end_before)
                - share.end_before;
            if grown < share.records {
                // Not landed (an append lands whole): nothing of this share is duplicated.
                // Growth by another writer short of the share is not ours either.
                continue;
            }
            for (q, n) in &share.from_sources {
                *found.entry(*q).or_default() += *n as u64;
            }
        }
        found
    }
}

/// Where the keyed intent of `consumer` reading `topic` lives.
pub fn keyed_intent_path(offsets_dir: &Path, consumer: &str, topic: &str) -> PathBuf {
    offsets_dir
        .join(INTENT_DIR)
        .join(format!("{consumer}.{topic}.kafka.intent"))
}

async fn load_intent(path: &Path) -> anyhow::Result<Option<KeyedIntent>> {
    match tokio::fs::read(path).await {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .with_context(|| format!("{} is not a relay intent", path.display()))
            .map(Some),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error).with_context(|| format!("cannot read {}", path.display())),
    }
}

async fn save_intent(path: &Path, intent: &KeyedIntent) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        tokio::fs::create_dir_all(dir)
            .await
            .with_context(|| format!("cannot create {}", dir.display()))?;
    }
    booblik_offset_store::durable_file::replace_async(path, serde_json::to_vec(intent)?)
        .await
        .with_context(|| format!("cannot save the intent {}", path.display()))
}

/// The booblik partition of a Kafka record: its key through the shared FNV-1a partitioner, or,
/// without a key, its Kafka partition modulo the target's count.
pub fn target_partition(
    partitioner: &Partitioner,
    key: Option<&[u8]>,
    kafka_partition: i32,
) -> i32 {
    match key {
        Some(key) => partitioner.for_key(key),
        None => kafka_partition.rem_euclid(partitioner.partition_count() as i32),
    }
}

/// Kafka's committed positions of `consumer` for `partitions` of `topic` (`None`: never
/// committed).
fn committed(
    consumer: &StreamConsumer,
    topic: &str,
    partitions: i32,
) -> anyhow::Result<BTreeMap<i32, Option<i64>>> {
    let mut list = TopicPartitionList::new();
    for q in 0..partitions {
        list.add_partition(topic, q);
    }
    let found = blocking(|| consumer.committed_offsets(list, KAFKA_REQUEST_TIMEOUT))
        .context("cannot fetch the group's committed offsets")?;
    Ok((0..partitions)
        .map(|q| {
            let offset = match found.find_partition(topic, q).map(|e| e.offset()) {
                Some(Offset::Offset(at)) => Some(at),
                _ => None,
            };
            (q, offset)
        })
        .collect())
}

/// Relays the Kafka topic `config.source` (at `brokers`) into the booblik topic
/// `config.target` through `target`, until stopped or caught up. `counters` are by Kafka
/// partition.
pub async fn relay_into_booblik(
    config: &RelayConfig,
    brokers: &str,
    target: &dyn LogEngine,
    counters: Arc<Counters>,
    shutdown: Shutdown,
) -> anyhow::Result<Summary> {
    let (topic, target_topic) = (config.source.topic(), config.target.topic());
    let sources = counters.partitions.len() as i32;
    let targets = target.partition_count(target_topic).await?;
    let partitioner = Partitioner::new((0..targets).collect::<Vec<i32>>());
    let mut logs: Vec<Arc<dyn PartitionLog>> = Vec::new();
    for p in 0..targets {
        logs.push(target.open(target_topic, p).await?);
    }
    let consumer: StreamConsumer = client_config(brokers)
        .set("group.id", &config.consumer)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .create()?;

    // Where Kafka says we are, and where each partition ends now.
    let saved = committed(&consumer, topic, sources)?;
    let mut position = BTreeMap::new();
    let mut end_at_start = BTreeMap::new();
    for q in 0..sources {
        let (low, high) =
            blocking(|| consumer.fetch_watermarks(topic, q, KAFKA_REQUEST_TIMEOUT))
                .with_context(|| format!("cannot read the bounds of kafka {topic}/{q}"))?;
        let at = match saved[&q] {
            Some(at) if at < low => {
                tracing::warn!(
                    partition = q,
                    committed = at,
                    start = low,
                    "records below the committed position were dropped by Kafka's retention"
                );
                low
            }
            Some(at) => at,
            None => low,
        };
        position.insert(q, at);
        end_at_start.insert(q, high);
    }

    // What the last crash may have duplicated.
    let intent_path = keyed_intent_path(&config.offsets_dir, &config.consumer, topic);
    let mut totals: BTreeMap<i32, u64> = BTreeMap::new();
    if let Some(last) = load_intent(&intent_path).await? {
        let mut ends = BTreeMap::new();
        for (p, log) in logs.iter().enumerate() {
            ends.insert(p as i32, log.bounds().await?.end);
        }
        let found = last.possible_duplicates(&position, &ends);
        totals = last.duplicates_counted.clone();
        for (q, n) in &found {
            *totals.entry(*q).or_default() += n;
        }
        // Re-based: nothing of this batch is in the target past today's ends (the same single
        // replace that keeps the total; see `intent`).
        let shares = last
            .shares
            .iter()
            .map(|share| TargetShare {
                end_before: ends[&share.partition],
                ..share.clone()
            })
            .collect();
        save_intent(
            &intent_path,
            &KeyedIntent {
                commits: last.commits.clone(),
                shares,
                duplicates_counted: totals.clone(),
            },
        )
        .await?;
        for (q, n) in &found {
            tracing::warn!(
                partition = q,
                duplicates = n,
                duplicates_total = totals[q],
                "the last write landed but its position was not committed: these records are written again"
            );
        }
        for (q, c) in counters.partitions.iter().enumerate() {
            let q = q as i32;
            let now = found.get(&q).copied().unwrap_or(0);
            c.duplicates.fetch_add(now, Ordering::Relaxed);
            c.duplicates_before.store(
                totals.get(&q).copied().unwrap_or(0) - now,
                Ordering::Relaxed,
            );
        }
    }
    for (q, c) in counters.partitions.iter().enumerate() {
        let q = q as i32;
        c.started_at.store(position[&q], Ordering::Relaxed);
        c.position.store(position[&q], Ordering::Relaxed);
        c.end_at_start.store(end_at_start[&q], Ordering::Relaxed);
    }
    tracing::info!(?position, ?end_at_start, targets, "relaying out of kafka");

    let mut assignment = TopicPartitionList::new();
    for (q, at) in &position {
        assignment.add_partition_offset(topic, *q, Offset::Offset(*at))?;
    }
    consumer.assign(&assignment)?;

    // Caught up: every partition at or past the end seen at start, *and* a read that found
    // nothing. The second half is for tansu 0.6.0, whose high watermark is the base offset of
    // the last batch + 1 (short of the true end); on Kafka it only adds one idle read.
    let past_end =
        |position: &BTreeMap<i32, i64>| position.iter().all(|(q, at)| *at >= end_at_start[q]);
    let mut idle = false;
    loop {
        if shutdown.is_triggered() || (config.exit_when_caught_up && idle && past_end(&position)) {
            return Ok(counters.summary());
        }
        // Read a batch across the Kafka partitions.
        let mut batch: Vec<(i32, i64, i32, Bytes)> = Vec::new();
        let first = tokio::select! {
            read = tokio::time::timeout(IDLE_WAIT, consumer.recv()) => read,
            () = shutdown.triggered() => return Ok(counters.summary()),
        };
        let mut next = match first {
            Err(_) => {
                idle = true;
                continue;
            }
            Ok(read) => Some(read),
        };
        idle = false;
        let fill_until = tokio::time::Instant::now() + BATCH_FILL_WAIT;
        while let Some(read) = next.take() {
            let message = read.context("kafka read failed")?;
            let q = message.partition();
            batch.push((
                q,
                message.offset(),
                target_partition(&partitioner, message.key(), q),
                Bytes::copy_from_slice(message.payload().unwrap_or_default()),
            ));
            if batch.len() >= config.batch_max_records {
                break;
            }
            next = tokio::time::timeout_at(fill_until, consumer.recv())
                .await
                .ok();
        }

        // Split it by target partition, in order.
        let mut commits: BTreeMap<i32, i64> = BTreeMap::new();
        let mut groups: BTreeMap<i32, (Vec<Bytes>, BTreeMap<i32, i64>)> = BTreeMap::new();
        for (q, offset, p, payload) in batch {
            commits.insert(q, offset + 1);
            let (payloads, from) = groups.entry(p).or_default();
            payloads.push(payload);
            *from.entry(q).or_default() += 1;
        }
        let mut shares = Vec::with_capacity(groups.len());
        for (p, (payloads, from)) in &groups {
            shares.push(TargetShare {
                partition: *p,
                end_before: logs[*p as usize].bounds().await?.end,
                records: payloads.len() as i64,
                from_sources: from.clone(),
            });
        }
        save_intent(
            &intent_path,
            &KeyedIntent {
                commits: commits.clone(),
                shares,
                duplicates_counted: totals.clone(),
            },
        )
        .await?;
        // FORCED, as into booblik from any source: the commit follows.
        let appends = groups.iter().map(|(p, (payloads, _))| {
            let log = logs[*p as usize].clone();
            async move { log.append(payloads, Ack::Forced).await }
        });
        for appended in futures::future::join_all(appends).await {
            appended.context("cannot append to the booblik target")?;
        }
        let mut list = TopicPartitionList::new();
        for (q, to) in &commits {
            list.add_partition_offset(topic, *q, Offset::Offset(*to))?;
        }
        blocking(|| consumer.commit(&list, CommitMode::Sync))
            .context("cannot commit the Kafka positions")?;
        for (q, to) in &commits {
            position.insert(*q, *to);
            let c = &counters.partitions[*q as usize];
            c.position.store(*to, Ordering::Relaxed);
        }
        for (_, from) in groups.values() {
            for (q, n) in from {
                counters.partitions[*q as usize]
                    .relayed
                    .fetch_add(*n as u64, Ordering::Relaxed);
            }
        }
        tracing::debug!(?commits, "relayed batch");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intent() -> KeyedIntent {
        KeyedIntent {
            commits: BTreeMap::from([(0, 50), (1, 30)]),
            shares: vec![
                TargetShare {
                    partition: 0,
                    end_before: 100,
                    records: 7,
                    from_sources: BTreeMap::from([(0, 4), (1, 3)]),
                },
                TargetShare {
                    partition: 1,
                    end_before: 10,
                    records: 5,
                    from_sources: BTreeMap::from([(0, 5)]),
                },
            ],
            duplicates_counted: BTreeMap::new(),
        }
    }

    #[test]
    fn a_committed_batch_duplicates_nothing() {
        let committed = BTreeMap::from([(0, 50), (1, 30)]);
        let ends = BTreeMap::from([(0, 107), (1, 15)]);
        assert!(intent().possible_duplicates(&committed, &ends).is_empty());
    }

    #[test]
    fn only_the_shares_that_landed_are_counted_by_their_source() {
        let committed = BTreeMap::from([(0, 41), (1, 27)]);
        let ends = BTreeMap::from([(0, 107), (1, 10)]);
        assert_eq!(
            intent().possible_duplicates(&committed, &ends),
            BTreeMap::from([(0, 4), (1, 3)])
        );
    }

    #[test]
    fn keys_pick_the_shared_partitioner_s_partition_and_keyless_records_keep_theirs() {
        let partitioner = Partitioner::new(vec![0, 1, 2]);
        for key in [&b"user-1"[..], b"", b"z"] {
            assert_eq!(
                target_partition(&partitioner, Some(key), 7),
                booblik_protocol::partition_for_key(key, 3) as i32
            );
        }
        assert_eq!(target_partition(&partitioner, None, 7), 1);
    }
}
