//! Where the broker under test runs: embedded in this process, in a child process, or elsewhere.
//!
//! * **Embedded** (the default for the queue, produce, e2e and soak workloads): one process, no
//!   build step, and the broker can be restarted in place (soak). The client and the broker then
//!   share the CPU and one `getrusage`.
//! * **Child process**: this same binary, re-executed with the hidden `serve-child` subcommand,
//!   runs an embedded broker alone. The fetch workload uses it so the broker's CPU time can be
//!   read from `/proc/<pid>/stat` apart from the client's — the only honest way to compare
//!   zero-copy and heap FETCH per GiB. Re-executing ourselves avoids depending on the
//!   `booblik-broker` binary having been built.
//! * **External** (`--broker host:port`): whatever answers there. Nothing is started or stopped.
//!
//! Every broker the harness starts listens on loopback only, port 0.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail};
use booblik_broker::storage::WriteMode;
use booblik_broker::{Broker, BrokerConfig, FetchMode, parse_topics};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};

use crate::cpu;

/// How long a child broker may take to print its address (recovery of a large log included).
const CHILD_START_TIMEOUT: Duration = Duration::from_mins(2);
/// How long a child broker may take to shut down after its stdin closes.
const CHILD_STOP_TIMEOUT: Duration = Duration::from_mins(1);
/// Longest line a child may print as its address.
const CHILD_ADDR_LINE_MAX_BYTES: u64 = 256;

/// Where a fresh broker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BrokerProcess {
    /// Inside the harness's process, on its runtime: its threads share one address space with
    /// the workload's (needed by the hop probe, whose table is per process, and by the soak,
    /// which restarts the broker).
    Embedded,
    /// A child process of its own (this binary's `serve-child`), as a server runs in
    /// production and as the experiment's peers run: its page-table work (the TLB shootdowns of
    /// an fsync's write-back, of unmapping a segment) interrupts only CPUs running broker
    /// threads, not the workload's.
    Child,
}

/// What to start.
#[derive(Debug, Clone)]
pub struct BrokerSpec {
    /// Topics, `name:partitions,…`.
    pub topics: String,
    /// How FETCH payloads are sent.
    pub fetch_mode: FetchMode,
    /// How records are written.
    pub write_mode: WriteMode,
    /// Segment capacity.
    pub segment_bytes: u64,
    /// Where the broker runs unless `--broker-process` says otherwise.
    pub process: BrokerProcess,
}

impl BrokerSpec {
    /// The given topics with the broker's defaults for everything else, embedded.
    pub fn with_topics(topics: impl Into<String>) -> Self {
        Self {
            topics: topics.into(),
            fetch_mode: FetchMode::ZeroCopy,
            write_mode: WriteMode::Mapped,
            segment_bytes: booblik_broker::storage::config::DEFAULT_SEGMENT_BYTES,
            process: BrokerProcess::Embedded,
        }
    }

    fn config(&self, data_dir: &Path, bind: SocketAddr) -> anyhow::Result<BrokerConfig> {
        let mut config = BrokerConfig {
            bind,
            topics: parse_topics(&self.topics).map_err(|e| anyhow::anyhow!(e))?,
            fetch_mode: self.fetch_mode,
            ..BrokerConfig::default()
        };
        config.storage.data_dir = data_dir.to_path_buf();
        config.storage.write_mode = self.write_mode;
        config.storage.segment_bytes = self.segment_bytes;
        Ok(config)
    }
}

/// A broker the harness talks to.
#[derive(Debug)]
pub struct BrokerHost {
    addr: String,
    kind: Kind,
    /// A data directory the host created and removes when dropped.
    scratch: Option<tempfile::TempDir>,
}

#[derive(Debug)]
enum Kind {
    Embedded {
        broker: Option<Broker>,
        config: BrokerConfig,
    },
    Child {
        child: Child,
        stdin: Option<ChildStdin>,
        pid: u32,
    },
    External,
}

impl BrokerHost {
    /// Starts a broker inside this process over `data_dir`.
    pub async fn start_embedded(spec: &BrokerSpec, data_dir: &Path) -> anyhow::Result<Self> {
        let config = spec.config(data_dir, loopback_any_port())?;
        let broker = Broker::start(config.clone())
            .await
            .context("starting the embedded broker")?;
        let addr = broker.local_addr().to_string();
        Ok(Self {
            addr,
            kind: Kind::Embedded {
                broker: Some(broker),
                config,
            },
            scratch: None,
        })
    }

    /// The broker at `external` if given; otherwise a fresh broker (embedded, or in a child
    /// process: `process`) over a new temporary data directory under `data_parent`, removed
    /// when the host is dropped.
    pub async fn fresh_or_external(
        external: Option<&str>,
        spec: &BrokerSpec,
        process: BrokerProcess,
        data_parent: &Path,
    ) -> anyhow::Result<Self> {
        if let Some(addr) = external {
            return Ok(Self::external(addr));
        }
        let scratch = tempfile::Builder::new()
            .prefix("booblik-load-")
            .tempdir_in(data_parent)
            .with_context(|| format!("creating a data directory in {}", data_parent.display()))?;
        let mut host = match process {
            BrokerProcess::Embedded => Self::start_embedded(spec, scratch.path()).await?,
            BrokerProcess::Child => Self::start_child(spec, scratch.path()).await?,
        };
        host.scratch = Some(scratch);
        Ok(host)
    }

    /// Starts a broker in a child process (this binary, `serve-child`) over `data_dir`.
    pub async fn start_child(spec: &BrokerSpec, data_dir: &Path) -> anyhow::Result<Self> {
        let exe = std::env::current_exe().context("locating this binary to re-execute it")?;
        let mut child = Command::new(exe)
            .arg("serve-child")
            .arg("--data-dir")
            .arg(data_dir)
            .arg("--topics")
            .arg(&spec.topics)
            .arg("--fetch-mode")
            .arg(match spec.fetch_mode {
                FetchMode::ZeroCopy => "zero-copy",
                FetchMode::Heap => "heap",
            })
            .arg("--write-mode")
            .arg(spec.write_mode.name())
            .arg("--segment-bytes")
            .arg(spec.segment_bytes.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("spawning the child broker")?;
        let pid = child.id().context("the child broker has no pid")?;
        let stdout = child.stdout.take().context("child stdout")?;
        let mut line = String::new();
        let mut reader = BufReader::new(stdout.take(CHILD_ADDR_LINE_MAX_BYTES));
        tokio::time::timeout(CHILD_START_TIMEOUT, reader.read_line(&mut line))
            .await
            .context("the child broker did not print its address in time")?
            .context("reading the child broker's address")?;
        let addr = line.trim().to_owned();
        if addr.parse::<SocketAddr>().is_err() {
            bail!("the child broker printed {addr:?} instead of its address");
        }
        let stdin = child.stdin.take();
        Ok(Self {
            addr,
            kind: Kind::Child { child, stdin, pid },
            scratch: None,
        })
    }

    /// A broker someone else runs.
    pub fn external(addr: impl Into<String>) -> Self {
        Self {
            addr: addr.into(),
            kind: Kind::External,
            scratch: None,
        }
    }

    /// `host:port` to connect to.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Where this broker runs; `None` for an external one.
    pub fn process(&self) -> Option<BrokerProcess> {
        match self.kind {
            Kind::Embedded { .. } => Some(BrokerProcess::Embedded),
            Kind::Child { .. } => Some(BrokerProcess::Child),
            Kind::External => None,
        }
    }

    /// The storage counters of every partition of `topic`, when the broker runs in this
    /// process; `None` for a child or an external broker.
    pub fn partition_stats(
        &self,
        topic: &str,
    ) -> Option<Vec<booblik_broker::storage::PartitionStats>> {
        let Kind::Embedded {
            broker: Some(broker),
            ..
        } = &self.kind
        else {
            return None;
        };
        let storage = broker.storage();
        let (_, partitions) = storage.topics().find(|(name, _)| name.as_str() == topic)?;
        Some(
            partitions
                .iter()
                .map(|partition| partition.stats())
                .collect(),
        )
    }

    /// True when the harness started this broker (and its logs are fresh).
    pub fn is_fresh(&self) -> bool {
        !matches!(self.kind, Kind::External)
    }

    /// CPU seconds the broker's process has used, when it has one of its own (child).
    pub fn own_cpu_seconds(&self) -> Option<f64> {
        match &self.kind {
            Kind::Child { pid, .. } => cpu::pid_cpu_seconds(*pid).ok(),
            _ => None,
        }
    }

    /// Stops and restarts an embedded broker on the same address and data directory: a graceful
    /// restart (acknowledged records were flushed and fsynced by the shutdown).
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        let Kind::Embedded { broker, config } = &mut self.kind else {
            bail!("only an embedded broker can be restarted by the harness");
        };
        if let Some(running) = broker.take() {
            running.shutdown().await.context("stopping the broker")?;
        }
        let mut config = config.clone();
        config.bind = self.addr.parse().context("the embedded broker's address")?;
        let started = Broker::start(config)
            .await
            .context("restarting the broker")?;
        *broker = Some(started);
        Ok(())
    }

    /// Stops a broker the harness started (gracefully); does nothing for an external one.
    pub async fn stop(self) -> anyhow::Result<()> {
        match self.kind {
            Kind::Embedded { broker, .. } => {
                if let Some(broker) = broker {
                    broker.shutdown().await.context("stopping the broker")?;
                }
            }
            Kind::Child {
                mut child, stdin, ..
            } => {
                drop(stdin); // end of input: the child shuts down
                let Ok(status) = tokio::time::timeout(CHILD_STOP_TIMEOUT, child.wait()).await
                else {
                    child.kill().await.context("killing the child broker")?;
                    bail!("the child broker did not stop in time and was killed");
                };
                let status = status.context("waiting for the child broker")?;
                anyhow::ensure!(status.success(), "the child broker exited with {status}");
            }
            Kind::External => {}
        }
        Ok(())
    }
}

fn loopback_any_port() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// The arguments of the hidden `serve-child` subcommand.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeChildArgs {
    /// Data directory.
    #[arg(long)]
    pub data_dir: PathBuf,
    /// Topics, `name:partitions,…`.
    #[arg(long)]
    pub topics: String,
    /// `zero-copy` or `heap`.
    #[arg(long, default_value = "zero-copy")]
    pub fetch_mode: FetchMode,
    /// `mapped` or `file`.
    #[arg(long, default_value = "mapped")]
    pub write_mode: WriteMode,
    /// Segment capacity in bytes.
    #[arg(long, default_value_t = booblik_broker::storage::config::DEFAULT_SEGMENT_BYTES)]
    pub segment_bytes: u64,
}

/// The child side: start a broker on loopback, print its address, serve until stdin closes.
pub async fn serve_child(args: ServeChildArgs) -> anyhow::Result<()> {
    let spec = BrokerSpec {
        topics: args.topics,
        fetch_mode: args.fetch_mode,
        write_mode: args.write_mode,
        segment_bytes: args.segment_bytes,
        process: BrokerProcess::Embedded,
    };
    let broker = Broker::start(spec.config(&args.data_dir, loopback_any_port())?)
        .await
        .context("starting the broker")?;
    println!("{}", broker.local_addr());
    let mut stdin = tokio::io::stdin();
    let mut sink = [0u8; 64];
    while stdin.read(&mut sink).await.unwrap_or(0) > 0 {}
    broker.shutdown().await.context("stopping the broker")?;
    Ok(())
}
