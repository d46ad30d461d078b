//! The flags every sample takes, so that a deployment (docker compose, a shell script) can set them
//! the same way everywhere: `--broker`, `--stats-bind`, `--topic`, and their `BOOBLIK_*`
//! variables.

use anyhow::Context;
use booblik_client::Client;
use clap::Args;

use crate::support::retry::{self, CONNECT_PATIENCE_MS};
use crate::support::shutdown::Shutdown;

/// The broker address used when neither `--broker` nor `BOOBLIK_BROKER` is given.
pub const DEFAULT_BROKER: &str = "127.0.0.1:9092";

/// The topic used when `--topic` is not given.
pub const DEFAULT_TOPIC: &str = "events";

/// Flags shared by every sample binary (flatten it into the binary's own `Parser`).
#[derive(Debug, Clone, Args)]
pub struct CommonArgs {
    /// Broker address, host:port.
    #[arg(long, env = "BOOBLIK_BROKER", default_value = DEFAULT_BROKER)]
    pub broker: String,

    /// Serve `GET /stats` (JSON) on this address, e.g. 0.0.0.0:8080. Off when not set.
    #[arg(long, env = "BOOBLIK_STATS_BIND")]
    pub stats_bind: Option<String>,

    /// The events topic.
    #[arg(long, default_value = DEFAULT_TOPIC)]
    pub topic: String,
}

impl CommonArgs {
    /// Connects to `--broker`, waiting up to [`CONNECT_PATIENCE_MS`] for it to come up.
    pub async fn connect(&self, shutdown: &Shutdown) -> anyhow::Result<Client> {
        connect(&self.broker, CONNECT_PATIENCE_MS, shutdown).await
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
