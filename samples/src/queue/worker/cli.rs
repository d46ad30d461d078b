//! Command-line pieces shared by the `queue-submit`, `queue-worker` and `queue-verify` binaries:
//! the common flags and the value parsers. Kept in the library so the three stay consistent.

use std::net::SocketAddr;
use std::sync::Arc;

use booblik_client::AckPolicy;
use clap::{Args, ValueEnum};

use crate::engine::{Ack, BooblikEngine, EngineKind, LogEngine};
use crate::queue::pick::Pick;
use crate::queue::record::ProtocolLevel;
use crate::support::cli::{EngineArgs, connect};
use crate::support::shutdown::Shutdown;

/// Default `--connect-wait-ms`: how long a queue binary keeps trying to reach the broker at
/// start (containers start in any order).
pub const DEFAULT_CONNECT_WAIT_MS: u64 = 60_000;

/// Flags every queue binary takes.
#[derive(Debug, Clone, Args)]
pub struct QueueArgs {
    /// Broker address (host:port; `--engine booblik`).
    #[arg(long, env = "BOOBLIK_BROKER", default_value = "127.0.0.1:9092")]
    pub broker: String,
    /// Serve `GET /stats` (JSON) on this address, e.g. 0.0.0.0:8080.
    #[arg(long, env = "BOOBLIK_STATS_BIND")]
    pub stats_bind: Option<SocketAddr>,
    /// Topic of task records (one partition).
    #[arg(long, env = "BOOBLIK_TASKS_TOPIC", default_value = "tasks")]
    pub tasks_topic: String,
    /// Topic of claims, extends and dones (exactly one partition).
    #[arg(long, env = "BOOBLIK_CLAIMS_TOPIC", default_value = "claims")]
    pub claims_topic: String,
    /// `--engine`, `--nats-url`, `--jetstream-replicas` (the queue's topics always have one
    /// partition: `--jetstream-partitions` does not apply to them).
    #[command(flatten)]
    pub engine: EngineArgs,
}

impl QueueArgs {
    /// The engine of `--engine`: booblik at `--broker` (waiting up to `connect_wait_ms` for it),
    /// or JetStream at `--nats-url`, where the tasks and claims topics are created with one
    /// stream each when they do not exist yet.
    pub async fn open_engine(
        &self,
        connect_wait_ms: u64,
        shutdown: &Shutdown,
    ) -> anyhow::Result<Arc<dyn LogEngine>> {
        match self.engine.engine {
            EngineKind::Booblik => {
                let client = connect(&self.broker, connect_wait_ms, shutdown).await?;
                Ok(Arc::new(BooblikEngine::new(client)))
            }
            EngineKind::Jetstream => {
                let engine = EngineArgs {
                    jetstream_partitions: 1,
                    ..self.engine.clone()
                };
                engine
                    .open(
                        &self.broker,
                        &[self.tasks_topic.as_str(), self.claims_topic.as_str()],
                        shutdown,
                    )
                    .await
            }
        }
    }
}

/// `--pick`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PickArg {
    /// A uniformly random claimable task (few collisions).
    Random,
    /// The oldest claimable task (every worker goes for the same one).
    First,
    /// Each worker its own order by rendezvous hashing over the live workers (needs
    /// `--protocol-level 2`).
    Rendezvous,
}

impl From<PickArg> for Pick {
    fn from(pick: PickArg) -> Self {
        match pick {
            PickArg::Random => Pick::Random,
            PickArg::First => Pick::First,
            PickArg::Rendezvous => Pick::Rendezvous,
        }
    }
}

/// `--protocol-level` of `queue-worker`: which record kinds it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProtocolArg {
    /// Claims, extends and dones: what every reader knows (the default).
    #[value(name = "1")]
    V1,
    /// Also releases at a clean shutdown and, for rendezvous pickers, heartbeats when idle:
    /// only once every reader runs code that knows them.
    #[value(name = "2")]
    V2,
}

impl From<ProtocolArg> for ProtocolLevel {
    fn from(level: ProtocolArg) -> Self {
        match level {
            ProtocolArg::V1 => ProtocolLevel::V1,
            ProtocolArg::V2 => ProtocolLevel::V2,
        }
    }
}

/// `--claim-ack` of `queue-worker` and `--ack` of `queue-submit` (NONE is not offered: both need
/// the offset the append returns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AckArg {
    /// Acknowledged after an fsync covered the record: verdicts come from a durable prefix.
    Forced,
    /// Acknowledged once written (page cache): faster, unsafe across a broker machine crash.
    Written,
}

impl From<AckArg> for AckPolicy {
    fn from(ack: AckArg) -> Self {
        match ack {
            AckArg::Forced => AckPolicy::Forced,
            AckArg::Written => AckPolicy::Written,
        }
    }
}

impl From<AckArg> for Ack {
    fn from(ack: AckArg) -> Self {
        match ack {
            AckArg::Forced => Ack::Forced,
            AckArg::Written => Ack::Written,
        }
    }
}
