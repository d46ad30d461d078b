//! The flags every sample takes, so that a deployment (docker compose, a shell script) can set them
//! the same way everywhere: `--broker`, `--stats-bind`, `--topic`, `--engine`, `--nats-url`, and
//! their `BOOBLIK_*` variables.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use booblik_client::Client;
use clap::Args;

use crate::engine::jetstream::StreamSettings;
use crate::engine::{BooblikEngine, EngineError, EngineKind, JetStreamEngine, LogEngine};
use crate::support::retry::{self, CONNECT_PATIENCE_MS};
use crate::support::shutdown::Shutdown;

/// The broker address used when neither `--broker` nor `BOOBLIK_BROKER` is given.
pub const DEFAULT_BROKER: &str = "127.0.0.1:9092";

/// The NATS server used when neither `--nats-url` nor `BOOBLIK_NATS_URL` is given.
pub const DEFAULT_NATS_URL: &str = "nats://127.0.0.1:4222";

/// The topic used when `--topic` is not given.
pub const DEFAULT_TOPIC: &str = "events";

/// Partitions of the events topic when a sample creates it on JetStream (booblik's broker
/// creates its topics itself, `events:3` by default).
pub const DEFAULT_PARTITIONS: i32 = 3;

/// Flags shared by every events sample binary (flatten it into the binary's own `Parser`).
#[derive(Debug, Clone, Args)]
pub struct CommonArgs {
    /// Broker address, host:port (`--engine booblik`).
    #[arg(long, env = "BOOBLIK_BROKER", default_value = DEFAULT_BROKER)]
    pub broker: String,

    /// Serve `GET /stats` (JSON) on this address, e.g. 0.0.0.0:8080. Off when not set.
    #[arg(long, env = "BOOBLIK_STATS_BIND")]
    pub stats_bind: Option<String>,

    /// The events topic.
    #[arg(long, default_value = DEFAULT_TOPIC)]
    pub topic: String,

    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Which engine the samples run on, and how to reach a JetStream cluster.
#[derive(Debug, Clone, Args)]
pub struct EngineArgs {
    /// The engine: booblik (one broker, `--broker`) or jetstream (NATS JetStream, `--nats-url`).
    #[arg(long, env = "BOOBLIK_ENGINE", default_value = "booblik")]
    pub engine: EngineKind,

    /// NATS URLs, comma-separated: any nodes of the cluster (the client learns the others).
    #[arg(
        long,
        env = "BOOBLIK_NATS_URL",
        value_delimiter = ',',
        default_value = DEFAULT_NATS_URL
    )]
    pub nats_url: Vec<String>,

    /// JetStream only: partitions (one stream each) of a topic that does not exist yet.
    #[arg(long, default_value_t = DEFAULT_PARTITIONS)]
    pub jetstream_partitions: i32,

    /// JetStream only: replicas of each stream created (3 needs a cluster of at least 3 nodes;
    /// 1 for a single server).
    #[arg(long, default_value_t = 3)]
    pub jetstream_replicas: usize,
}

impl CommonArgs {
    /// Connects to `--broker`, waiting up to [`CONNECT_PATIENCE_MS`] for it to come up.
    pub async fn connect(&self, shutdown: &Shutdown) -> anyhow::Result<Client> {
        connect(&self.broker, CONNECT_PATIENCE_MS, shutdown).await
    }

    /// The engine of `--engine`, with `--topic` there (created on JetStream when missing).
    pub async fn open_engine(&self, shutdown: &Shutdown) -> anyhow::Result<Arc<dyn LogEngine>> {
        self.engine
            .open(&self.broker, &[self.topic.as_str()], shutdown)
            .await
    }
}

impl EngineArgs {
    /// The engine of `--engine`: booblik at `broker`, or JetStream at `--nats-url`, waiting up
    /// to [`CONNECT_PATIENCE_MS`] for it to come up. On JetStream every topic of `topics` that
    /// does not exist yet is created with `--jetstream-partitions` streams of
    /// `--jetstream-replicas` replicas; an existing one is left as it is.
    pub async fn open(
        &self,
        broker: &str,
        topics: &[&str],
        shutdown: &Shutdown,
    ) -> anyhow::Result<Arc<dyn LogEngine>> {
        match self.engine {
            EngineKind::Booblik => {
                let client = connect(broker, CONNECT_PATIENCE_MS, shutdown).await?;
                Ok(Arc::new(BooblikEngine::new(client)))
            }
            EngineKind::Jetstream => {
                let settings = StreamSettings {
                    replicas: self.jetstream_replicas,
                    ..StreamSettings::default()
                };
                let engine = open_jetstream(&self.nats_url, &settings).await?;
                for topic in topics {
                    ensure_topic(&engine, topic, self.jetstream_partitions, &settings).await?;
                }
                Ok(Arc::new(engine))
            }
        }
    }
}

/// Connects to JetStream at `urls` and waits up to [`CONNECT_PATIENCE_MS`] until it answers (a
/// cluster started together with the samples elects its meta leader first).
pub async fn open_jetstream(
    urls: &[String],
    settings: &StreamSettings,
) -> anyhow::Result<JetStreamEngine> {
    let engine = JetStreamEngine::connect(urls)
        .await
        .with_context(|| format!("cannot connect to NATS at {}", urls.join(",")))?;
    engine
        .wait_ready(Duration::from_millis(CONNECT_PATIENCE_MS))
        .await
        .with_context(|| {
            format!(
                "JetStream at {} did not answer within {CONNECT_PATIENCE_MS} ms (streams of {} replicas)",
                urls.join(","),
                settings.replicas
            )
        })?;
    Ok(engine)
}

/// Creates `topic` with `partitions` streams unless it exists (with any number of partitions:
/// those are the operator's).
pub async fn ensure_topic(
    engine: &JetStreamEngine,
    topic: &str,
    partitions: i32,
    settings: &StreamSettings,
) -> anyhow::Result<()> {
    match engine.partition_count(topic).await {
        Ok(_) => Ok(()),
        Err(EngineError::Unknown(_)) => {
            tracing::info!(
                topic,
                partitions,
                replicas = settings.replicas,
                "creating the topic's streams"
            );
            let deadline = tokio::time::Instant::now() + Duration::from_millis(CONNECT_PATIENCE_MS);
            // A cluster that has just started may time out a stream creation while it elects its
            // meta leader ("jetstream request timed out"): try again until the deadline. Only
            // that: the engine reports every creation error as unavailable, and a permanent one
            // (too many replicas, say) must fail at once. Creating is idempotent, so a creation
            // that did land is found next time.
            loop {
                match engine
                    .ensure_topics(&[(topic.to_owned(), partitions)], settings)
                    .await
                {
                    Ok(()) => break,
                    Err(error)
                        if error.is_transient()
                            && error.to_string().contains("timed out")
                            && tokio::time::Instant::now() < deadline =>
                    {
                        tracing::info!(topic, %error, "creating the topic's streams again");
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                    Err(error) => {
                        return Err(error)
                            .with_context(|| format!("cannot create topic {topic} on JetStream"));
                    }
                }
            }
            // A stream just created answers publishes only once its replicas elected a leader
            // (until then: "no responders"). Stream info is answered by that leader, so wait
            // for it: the first publishes would otherwise fail.
            for partition in 0..partitions {
                loop {
                    let answered =
                        async { engine.open(topic, partition).await?.bounds().await }.await;
                    match answered {
                        Ok(_) => break,
                        Err(error)
                            if error.is_transient() && tokio::time::Instant::now() < deadline =>
                        {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                        Err(error) => {
                            return Err(error).with_context(|| {
                                format!("topic {topic} partition {partition}: no stream leader")
                            });
                        }
                    }
                }
            }
            Ok(())
        }
        Err(error) => Err(error).with_context(|| format!("topic {topic} on JetStream")),
    }
}

/// Connects to `broker`, waiting up to `patience_ms` for it to come up ([`retry::connect`]), and
/// names the broker in the error: what every sample binary does first.
pub async fn connect(
    broker: &str,
    patience_ms: u64,
    shutdown: &Shutdown,
) -> anyhow::Result<Client> {
    retry::connect(broker, patience_ms, shutdown)
        .await
        .with_context(|| {
            format!("cannot connect to the broker at {broker} within {patience_ms} ms")
        })
}
