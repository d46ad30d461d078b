//! The relay: mirror or migrate a topic between booblik and another log, reading one side with
//! its own client and writing the other with its own (decision R14: a relay instead of Kafka
//! protocol compatibility). Both formats stay whole; the translation is paid once, here.
//!
//! It is the samples' clearest lesson in **where the position lives**:
//!
//! | reading | the position lives | why |
//! |---|---|---|
//! | booblik | the `FileOffsetStore`, saved after the target acknowledged | the broker keeps no consumer state |
//! | JetStream | the `FileOffsetStore`, as for every sample on JetStream | the engine's contract: positions are the consumer's |
//! | Kafka (feature `kafka`) | Kafka's committed offsets of the group, for partitions the relay assigns itself | Kafka keeps consumer positions; assign: no membership, no rebalance |
//!
//! | writing | what a restart learns from the target | duplicates |
//! |---|---|---|
//! | JetStream | the source position in the last record's headers; `Nats-Msg-Id` | none: it resumes after the tail |
//! | Kafka | the source position in the last record's headers | none: it resumes after the tail |
//! | booblik | nothing per record (no headers): an intent file vs. the high watermark | counted, at most one batch per partition per crash |
//!
//! Partition p of the source goes to partition p of the target; the relay refuses to start when
//! the counts differ. Out of Kafka the key picks the booblik partition instead (`kafka.rs`). Streams are named as the JetStream engine names them
//! ([`crate::engine::jetstream::naming`]). `docs/relay.md` has the whole story and the figures.
//!
//! # Layout
//!
//! | file | what it is |
//! |---|---|
//! | `mod.rs` | [`RelayConfig`] and [`run`]: open both sides, check partitions, one task per partition |
//! | `endpoint.rs` | `booblik://…`, `jetstream://…` and `kafka://…` URLs |
//! | `partition.rs` | one partition's loop: read, write, save the position |
//! | `target.rs` | what a target must answer: where to resume, and a write |
//! | `target_booblik.rs` | into booblik: appends guarded by an intent |
//! | `target_jetstream.rs` | into JetStream: headers with the source position, tail read on start |
//! | `intent.rs` | the intent file: the source range about to be written |
//! | `kafka.rs` | feature `kafka`: into Kafka (headers, tail read), and out of Kafka into booblik (group offsets, keys through the shared partitioner, one keyed intent) |
//! | `summary.rs` | counters, `GET /stats` and the JSON summary |
//! | `bench.rs` | `--bench-records`: relay records/s beside each side's produce rate |

pub mod bench;
pub mod endpoint;
pub mod intent;
#[cfg(feature = "kafka")]
pub mod kafka;
pub mod partition;
pub mod summary;
pub mod target;
pub mod target_booblik;
pub mod target_jetstream;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use booblik_offset_store::FileOffsetStore;

pub use endpoint::Endpoint;
pub use summary::{Counters, Summary};

use crate::engine::jetstream::naming;
use crate::engine::{BooblikEngine, JetStreamEngine, LogEngine, ReadLimits};
use crate::support::cli;
use crate::support::retry::CONNECT_PATIENCE_MS;
use crate::support::shutdown::Shutdown;
use target::TargetPartition;
use target_booblik::BooblikTarget;
use target_jetstream::JetStreamTarget;

/// How long a JetStream cluster may take to answer at start (a fresh cluster elects its meta
/// leader first).
pub const JETSTREAM_READY_LIMIT: Duration = Duration::from_secs(30);
/// The default batch: records read (and written, and saved) at a time. It bounds what a crash
/// can duplicate into booblik, per partition.
pub const DEFAULT_BATCH_MAX_RECORDS: usize = 500;

/// What to relay, and how.
#[derive(Debug, Clone)]
pub struct RelayConfig {
    /// Read from here.
    pub source: Endpoint,
    /// Write to here.
    pub target: Endpoint,
    /// The `FileOffsetStore` directory (positions) and the intents (into booblik).
    pub offsets_dir: PathBuf,
    /// The offset store's consumer name: letters, digits, `_`, `-`.
    pub consumer: String,
    /// Records per batch, in `1..=`[`crate::engine::MAX_READ_RECORDS`].
    pub batch_max_records: usize,
    /// Stop once every partition is relayed up to the source end seen at start.
    pub exit_when_caught_up: bool,
    /// Into JetStream: create the target's missing streams (the source's partition count, this
    /// many replicas) before checking the counts. `None` leaves the target as it is.
    pub create_streams_replicas: Option<usize>,
}

/// Both sides of a relay, opened once ([`Sides::open`]) and shared by the partition-count
/// check, the relay and `--bench-records`.
#[derive(Debug)]
pub struct Sides {
    /// The side read.
    pub source: Side,
    /// The side written.
    pub target: Side,
}

impl Sides {
    /// Connects to both ends of `config` (waiting for a JetStream cluster to answer).
    pub async fn open(config: &RelayConfig, shutdown: &Shutdown) -> anyhow::Result<Self> {
        Ok(Self {
            source: open(&config.source, shutdown)
                .await
                .with_context(|| format!("source {}", config.source))?,
            target: open(&config.target, shutdown)
                .await
                .with_context(|| format!("target {}", config.target))?,
        })
    }
}

/// Opens one side.
async fn open(endpoint: &Endpoint, shutdown: &Shutdown) -> anyhow::Result<Side> {
    match endpoint {
        Endpoint::Booblik { addr, .. } => {
            let client = cli::connect(addr, CONNECT_PATIENCE_MS, shutdown).await?;
            Ok(Side::Booblik(BooblikEngine::new(client)))
        }
        Endpoint::JetStream { urls, .. } => {
            let engine = JetStreamEngine::connect(urls).await?;
            engine.wait_ready(JETSTREAM_READY_LIMIT).await?;
            Ok(Side::JetStream(Box::new(engine)))
        }
        Endpoint::Kafka { brokers, .. } => {
            #[cfg(feature = "kafka")]
            {
                Ok(Side::Kafka(brokers.join(",")))
            }
            #[cfg(not(feature = "kafka"))]
            {
                let _ = brokers;
                bail!("this build has no Kafka client: build with `--features kafka`")
            }
        }
    }
}

/// An opened side: the engine, plus what a target adapter needs beyond it.
#[derive(Debug)]
pub enum Side {
    /// A booblik broker.
    Booblik(BooblikEngine),
    /// A JetStream cluster. Boxed: the JetStream context is large.
    JetStream(Box<JetStreamEngine>),
    /// Kafka's bootstrap brokers (`host:port,…`): its clients are made where they are used.
    #[cfg(feature = "kafka")]
    Kafka(String),
}

impl Side {
    /// The engine of a booblik or JetStream side; a Kafka side is not one.
    // Without the feature `kafka` every side is an engine and the `Err` arm does not exist.
    #[cfg_attr(not(feature = "kafka"), allow(clippy::unnecessary_wraps))]
    fn engine(&self) -> anyhow::Result<&dyn LogEngine> {
        match self {
            Side::Booblik(engine) => Ok(engine),
            Side::JetStream(engine) => Ok(engine.as_ref()),
            #[cfg(feature = "kafka")]
            Side::Kafka(brokers) => bail!("kafka://{brokers} is not a booblik or JetStream engine"),
        }
    }

    /// How many partitions `topic` has on this side.
    async fn partition_count(&self, topic: &str) -> anyhow::Result<i32> {
        match self {
            #[cfg(feature = "kafka")]
            Side::Kafka(brokers) => kafka::partition_count(brokers, topic),
            _ => Ok(self.engine()?.partition_count(topic).await?),
        }
    }
}

/// Relays until `shutdown` (or until caught up), then returns what it did. `counters` is
/// filled as it goes (serve it as `GET /stats`); make it with [`counters_for`].
pub async fn run(
    config: &RelayConfig,
    sides: &Sides,
    counters: Arc<Counters>,
    shutdown: Shutdown,
) -> anyhow::Result<Summary> {
    let (source_topic, target_topic) = (config.source.topic(), config.target.topic());
    let (source, target) = (&sides.source, &sides.target);
    #[cfg(feature = "kafka")]
    if let Side::Kafka(brokers) = source {
        // Out of Kafka the position is Kafka's and keys pick the partitions: its own loop.
        return kafka::relay_into_booblik(config, brokers, target.engine()?, counters, shutdown)
            .await;
    }
    let partitions = counters.partitions.len() as i32;
    let store = Arc::new(
        FileOffsetStore::open(&config.offsets_dir)
            .await
            .with_context(|| format!("cannot open {}", config.offsets_dir.display()))?,
    );
    let limits = ReadLimits {
        max_records: config.batch_max_records,
        ..ReadLimits::default()
    };
    // One producer for every partition of a Kafka target (it is a connection pool).
    #[cfg(feature = "kafka")]
    let kafka_producer = match target {
        Side::Kafka(brokers) => Some(kafka::producer(brokers)?),
        _ => None,
    };
    let mut tasks = tokio::task::JoinSet::new();
    for p in 0..partitions {
        let log = source.engine()?.open(source_topic, p).await?;
        let writer: Box<dyn TargetPartition> = match target {
            Side::Booblik(engine) => Box::new(BooblikTarget::new(
                engine.open(target_topic, p).await?,
                intent::path(&config.offsets_dir, &config.consumer, source_topic, p),
            )),
            Side::JetStream(engine) => {
                let stream = engine
                    .context()
                    .get_stream(naming::stream_name(target_topic, p)?)
                    .await
                    .with_context(|| format!("{}: no stream for partition {p}", config.target))?;
                Box::new(JetStreamTarget::new(
                    engine.context().clone(),
                    stream,
                    naming::subject(target_topic, p)?,
                    format!("{source_topic}/{p}"),
                ))
            }
            #[cfg(feature = "kafka")]
            Side::Kafka(brokers) => Box::new(kafka::KafkaTarget::new(
                kafka_producer.clone().expect("made for a Kafka target"),
                brokers,
                target_topic,
                p,
                format!("{source_topic}/{p}"),
            )),
        };
        let relay = partition::PartitionRelay {
            source: log,
            target: writer,
            store: store.clone(),
            consumer: config.consumer.clone(),
            limits,
            exit_when_caught_up: config.exit_when_caught_up,
            counters: counters.partitions[p as usize].clone(),
        };
        tasks.spawn(relay.run(shutdown.clone()));
    }
    let mut failure = None;
    while let Some(done) = tasks.join_next().await {
        if let Err(error) = done.context("a partition task panicked").and_then(|r| r) {
            tracing::error!(error = format!("{error:#}"), "a partition stopped");
            // One partition failing stops the others cleanly: each saves the batch in hand.
            shutdown.trigger();
            failure.get_or_insert(error);
        }
    }
    match failure {
        Some(error) => Err(error),
        None => Ok(counters.summary()),
    }
}

/// Checks the configuration and both partition counts, and returns counters for the relay.
/// Refuses (before anything is read or written) when the counts differ: partition p goes to
/// partition p, and a key's partition depends on the count.
pub async fn counters_for(config: &RelayConfig, sides: &Sides) -> anyhow::Result<Counters> {
    if config.consumer.is_empty()
        || !config
            .consumer
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
    {
        bail!(
            "consumer name {:?}: letters, digits, '_', '-'",
            config.consumer
        );
    }
    if !(1..=crate::engine::MAX_READ_RECORDS).contains(&config.batch_max_records) {
        bail!(
            "batch of {} records: 1..={}",
            config.batch_max_records,
            crate::engine::MAX_READ_RECORDS
        );
    }
    if matches!(config.source, Endpoint::Kafka { .. })
        && !matches!(config.target, Endpoint::Booblik { .. })
    {
        bail!(
            "out of Kafka the relay writes booblik only (the key picks a booblik partition); {} is not booblik",
            config.target
        );
    }
    let (source, target) = (&sides.source, &sides.target);
    let from = source
        .partition_count(config.source.topic())
        .await
        .with_context(|| format!("source {}", config.source))?;
    if let (Some(replicas), Side::JetStream(engine)) = (config.create_streams_replicas, target) {
        let settings = crate::engine::jetstream::StreamSettings {
            replicas,
            max_age: None,
        };
        // The samples' own topic setup: creates the streams when the topic has none, then waits
        // until every new stream has a leader (a fresh R3 stream answers nothing before).
        cli::ensure_topic(engine, config.target.topic(), from, &settings)
            .await
            .with_context(|| format!("cannot create the streams of {}", config.target))?;
    }
    let to = target
        .partition_count(config.target.topic())
        .await
        .with_context(|| format!("target {}", config.target))?;
    // Out of Kafka the key picks the target partition: any two counts go together. Counters
    // are by Kafka partition.
    let keyed = matches!(config.source, Endpoint::Kafka { .. });
    if from != to && !keyed {
        bail!(
            "the source {} has {from} partitions and the target {} has {to}: partition p is relayed to partition p, so the counts must be equal",
            config.source,
            config.target
        );
    }
    Ok(Counters::new(from))
}
