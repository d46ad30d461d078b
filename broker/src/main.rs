//! `booblik-broker`: runs the broker, or checks one (`health`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use booblik_broker::server::metrics::install_prometheus;
use booblik_broker::storage::WriteMode;
use booblik_broker::{Broker, BrokerConfig, FetchMode, parse_topics};
use booblik_protocol::{
    Decoded, ErrorCode, MetadataRequest, MetadataResponse, Request, RequestBody, WireMessage,
    decode_response_frame,
};
use clap::{Args, Parser, Subcommand};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A single-node append-only log broker speaking the booblik protocol.
#[derive(Debug, Parser)]
#[command(version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the broker (the default when no subcommand is given).
    Serve(ServeArgs),
    /// Exit 0 only if a broker answers METADATA (a container healthcheck without curl).
    Health(HealthArgs),
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// Address to listen on. Binding a wildcard (0.0.0.0) must be asked for explicitly.
    #[arg(long, env = "BOOBLIK_BIND", default_value = "127.0.0.1:9092")]
    bind: SocketAddr,
    /// Directory holding one `<topic>-<partition>/` directory of segments per partition.
    #[arg(long, env = "BOOBLIK_DATA_DIR", default_value = "booblik-data")]
    data_dir: PathBuf,
    /// Topics and partition counts, fixed while the broker runs: `name:partitions,…`.
    #[arg(
        long,
        env = "BOOBLIK_TOPICS",
        default_value = "events:3,tasks:1,claims:1"
    )]
    topics: String,
    /// Capacity of one segment file in bytes; also bounds the largest record (size + 8).
    #[arg(long, env = "BOOBLIK_SEGMENT_BYTES", default_value_t = 512 * 1024 * 1024)]
    segment_bytes: u64,
    /// Drop the oldest sealed segments while a partition holds more than this many bytes.
    #[arg(long, env = "BOOBLIK_RETENTION_BYTES")]
    retention_bytes: Option<u64>,
    /// Drop sealed segments whose last write is older than this many milliseconds.
    #[arg(long, env = "BOOBLIK_RETENTION_MS")]
    retention_ms: Option<u64>,
    /// `mapped` (memory-mapped, pre-sized segments) or `file` (positional writes).
    #[arg(long, env = "BOOBLIK_WRITE_MODE", default_value = "mapped")]
    write_mode: WriteMode,
    /// `zero-copy` (sendfile) or `heap` (read into memory, then write: the measured control).
    #[arg(long, env = "BOOBLIK_FETCH_MODE", default_value = "zero-copy")]
    fetch_mode: FetchMode,
    /// Open connections allowed at once; more are accepted and closed immediately.
    #[arg(long, env = "BOOBLIK_MAX_CONNECTIONS", default_value_t = 1024)]
    max_connections: usize,
    /// Serve Prometheus text metrics on this address (`/metrics`).
    #[arg(long, env = "BOOBLIK_METRICS_BIND")]
    metrics_bind: Option<SocketAddr>,
    /// Close a connection that sent no complete request for this long.
    #[arg(long, env = "BOOBLIK_IDLE_TIMEOUT_MS", default_value_t = 600_000)]
    idle_timeout_ms: u64,
    /// Close a connection whose started frame is not complete within this time.
    #[arg(long, env = "BOOBLIK_FRAME_READ_TIMEOUT_MS", default_value_t = 30_000)]
    frame_read_timeout_ms: u64,
    /// Close a connection whose response cannot be written within this time.
    #[arg(long, env = "BOOBLIK_WRITE_TIMEOUT_MS", default_value_t = 30_000)]
    write_timeout_ms: u64,
    /// Appends queued per partition before producers wait (backpressure).
    #[arg(long, env = "BOOBLIK_WRITER_QUEUE_DEPTH", default_value_t = 1024)]
    writer_queue_depth: usize,
    /// Bytes of records queued for the writers of all partitions together before producers
    /// wait (backpressure); a partition with nothing queued may always admit one batch, and a
    /// batch larger than this is queued alone.
    #[arg(
        long,
        env = "BOOBLIK_WRITER_QUEUE_BYTES",
        default_value_t = 268_435_456
    )]
    writer_queue_bytes: u64,
}

#[derive(Debug, Args)]
struct HealthArgs {
    /// Broker to ask.
    #[arg(long, env = "BOOBLIK_BROKER", default_value = "127.0.0.1:9092")]
    broker: String,
    /// Give up after this many milliseconds.
    #[arg(long, env = "BOOBLIK_HEALTH_TIMEOUT_MS", default_value_t = 2_000)]
    timeout_ms: u64,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Runtime::new().context("cannot start the tokio runtime")?;
    match cli.command {
        Some(Command::Health(args)) => runtime.block_on(health(&args)),
        Some(Command::Serve(args)) => runtime.block_on(serve(args)),
        None => runtime.block_on(serve(cli.serve)),
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        // Colour codes only for people: `docker logs` and log files read plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .init();
    let mut config = BrokerConfig {
        bind: args.bind,
        topics: parse_topics(&args.topics).map_err(anyhow::Error::msg)?,
        fetch_mode: args.fetch_mode,
        max_connections: args.max_connections,
        idle_timeout_ms: args.idle_timeout_ms,
        frame_read_timeout_ms: args.frame_read_timeout_ms,
        write_timeout_ms: args.write_timeout_ms,
        ..BrokerConfig::default()
    };
    config.storage.writer_queue_depth = args.writer_queue_depth;
    config.storage.writer_queue_bytes = args.writer_queue_bytes;
    config.storage.data_dir = args.data_dir;
    config.storage.segment_bytes = args.segment_bytes;
    config.storage.retention_bytes = args.retention_bytes;
    config.storage.retention_ms = args.retention_ms;
    config.storage.write_mode = args.write_mode;
    // Before anything is opened or bound: a bad flag is a usage error, named as such.
    config.validate()?;
    if let Some(bind) = args.metrics_bind {
        install_prometheus(bind).map_err(anyhow::Error::msg)?;
        booblik_broker::storage::describe_metrics();
        tracing::info!(%bind, "metrics on http://{bind}/metrics");
    }
    let broker = Broker::start(config).await?;
    shutdown_signal().await?;
    tracing::info!("shutting down: finishing in-flight requests, then fsync");
    broker.shutdown().await?;
    Ok(())
}

async fn shutdown_signal() -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r.context("cannot listen for SIGINT")?,
        _ = term.recv() => {}
    }
    Ok(())
}

/// One METADATA round trip on a fresh connection, with no client library: the healthcheck must
/// not depend on anything that could itself be broken.
async fn health(args: &HealthArgs) -> anyhow::Result<()> {
    let check = async {
        let mut stream = tokio::net::TcpStream::connect(&args.broker)
            .await
            .with_context(|| format!("cannot connect to {}", args.broker))?;
        let mut out = Vec::new();
        Request {
            correlation_id: 1,
            body: RequestBody::Metadata(MetadataRequest::default()),
        }
        .encode(&mut out);
        stream.write_all(&out).await?;
        let mut buf = Vec::new();
        loop {
            if let Decoded::Complete { value, .. } = decode_response_frame(&buf)? {
                if value.header.correlation_id != 1 {
                    bail!(
                        "answer to correlation id {}, expected 1",
                        value.header.correlation_id
                    );
                }
                if value.header.error_code != ErrorCode::None {
                    bail!("broker answered {}", value.header.error_code);
                }
                let (meta, _) = MetadataResponse::decode(value.body)?;
                return Ok(meta);
            }
            if stream.read_buf(&mut buf).await? == 0 {
                bail!("broker closed the connection");
            }
        }
    };
    let meta = tokio::time::timeout(Duration::from_millis(args.timeout_ms), check)
        .await
        .with_context(|| format!("no answer within {} ms", args.timeout_ms))??;
    println!(
        "ok: {} topics: {}",
        meta.topics.len(),
        meta.topics
            .iter()
            .map(|t| format!("{}:{}", t.name, t.partitions.len()))
            .collect::<Vec<_>>()
            .join(",")
    );
    Ok(())
}
