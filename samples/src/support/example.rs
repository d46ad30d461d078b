//! What every example in `examples/` starts with: a broker to talk to — the one named by
//! `--broker host:port`, or, without it, one started in this process on a free port with its log
//! in a temporary directory (removed at the end), so `cargo run --example NAME` needs nothing
//! else.

use booblik_broker::Broker;
use booblik_client::{Client, ConnectionConfig};
use clap::Parser;
use tempfile::TempDir;

use super::embedded_broker;

/// The flags every example takes.
#[derive(Debug, Clone, Default, Parser)]
pub struct ExampleArgs {
    /// A running broker (`host:port`, topics `events:3,tasks:1,claims:1`); without it the example
    /// starts one in-process.
    #[arg(long)]
    pub broker: Option<String>,
}

/// A connected client, and the embedded broker if the example started one.
#[derive(Debug)]
pub struct ExampleBroker {
    /// A client of the broker.
    pub client: Client,
    /// The broker's address.
    pub addr: String,
    embedded: Option<(Broker, TempDir)>,
}

impl ExampleBroker {
    /// Connects to `args.broker`, or starts an embedded broker and connects to it.
    pub async fn connect(args: &ExampleArgs) -> anyhow::Result<Self> {
        let (addr, embedded) = if let Some(addr) = &args.broker {
            (addr.clone(), None)
        } else {
            let dir = tempfile::tempdir()?;
            let broker = embedded_broker::start(
                dir.path(),
                "127.0.0.1:0".parse()?,
                embedded_broker::DEMO_TOPICS,
            )
            .await?;
            (broker.local_addr().to_string(), Some((broker, dir)))
        };
        let client = Client::connect(&addr, ConnectionConfig::default()).await?;
        Ok(Self {
            client,
            addr,
            embedded,
        })
    }

    /// Whether the broker is the example's own (its log starts empty).
    pub fn is_embedded(&self) -> bool {
        self.embedded.is_some()
    }

    /// The embedded broker's temporary directory, for files that must not outlive its log.
    pub fn embedded_dir(&self) -> Option<&std::path::Path> {
        self.embedded.as_ref().map(|(_, dir)| dir.path())
    }

    /// Stops the embedded broker, if any, and removes its directory.
    pub async fn shutdown(self) -> anyhow::Result<()> {
        drop(self.client);
        if let Some((broker, dir)) = self.embedded {
            broker.shutdown().await?;
            drop(dir);
        }
        Ok(())
    }
}
