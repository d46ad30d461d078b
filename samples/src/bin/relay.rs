//! `relay`: mirrors a topic from one log into another and, on exit, prints a JSON summary.
//!
//! ```text
//! relay SOURCE TARGET --offsets-dir DIR [--stats-bind addr] [--exit-when-caught-up]
//!       [--batch-max-records 500] [--consumer-name relay] [--create-streams-replicas R]
//!       [--bench-records N]
//!
//!   SOURCE, TARGET:  booblik://host:port/topic  |  jetstream://host:port[,host:port]/topic
//!                    |  kafka://host:port[,host:port]/topic   (built with --features kafka)
//! ```
//!
//! With `--bench-records N` it first produces N records per partition into the source, relays
//! to the end, then produces N per partition into the target, and prints the three rates
//! (`relay::bench`; scratch topics only).
//!
//! Partition p goes to partition p; both topics must exist with the same partition count (out
//! of Kafka, into booblik only, the key picks the partition instead). The
//! code that matters is `booblik_samples::relay`; `docs/relay.md` says where each position lives.

use std::path::PathBuf;
use std::sync::Arc;

use booblik_samples::relay::{self, DEFAULT_BATCH_MAX_RECORDS, Endpoint, RelayConfig, bench};
use booblik_samples::support::shutdown::Shutdown;
use booblik_samples::support::{logging, stats_http};
use clap::Parser;

#[derive(Debug, Parser)]
#[command(
    name = "relay",
    version,
    about = "Relay a topic between booblik, JetStream and (feature `kafka`) Kafka"
)]
struct Cli {
    /// Read from: `booblik://host:port/topic`, `jetstream://host:port[,host:port]/topic` or
    /// `kafka://host:port[,host:port]/topic` (built with `--features kafka`).
    source: Endpoint,
    /// Write to: the same forms.
    target: Endpoint,
    /// Where the source positions (a FileOffsetStore) and the intents live.
    #[arg(long, env = "BOOBLIK_OFFSETS_DIR")]
    offsets_dir: PathBuf,
    /// Serve `GET /stats` (JSON) on this address. Off when not set.
    #[arg(long, env = "BOOBLIK_STATS_BIND")]
    stats_bind: Option<String>,
    /// Stop once every partition is relayed up to the source end seen at start.
    #[arg(long)]
    exit_when_caught_up: bool,
    /// Records per batch (read, written, saved together): bounds a crash's duplicates.
    #[arg(long, default_value_t = DEFAULT_BATCH_MAX_RECORDS)]
    batch_max_records: usize,
    /// The offset store's consumer name (one relay per name and source topic).
    #[arg(long, default_value = "relay")]
    consumer_name: String,
    /// Into JetStream: create the target's missing streams, as many as the source has
    /// partitions, with this many replicas (1 or 3). Existing streams are left as they are.
    #[arg(long)]
    create_streams_replicas: Option<usize>,
    /// Benchmark on scratch topics: produce N records per partition into the source, relay
    /// them, produce N into the target; print the three rates. Implies --exit-when-caught-up.
    #[arg(long)]
    bench_records: Option<u64>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    logging::init();
    let cli = Cli::parse();
    let shutdown = Shutdown::new().trigger_on_signals();
    let config = RelayConfig {
        source: cli.source,
        target: cli.target,
        offsets_dir: cli.offsets_dir,
        consumer: cli.consumer_name,
        batch_max_records: cli.batch_max_records,
        exit_when_caught_up: cli.exit_when_caught_up || cli.bench_records.is_some(),
        create_streams_replicas: cli.create_streams_replicas,
    };
    let sides = relay::Sides::open(&config, &shutdown).await?;
    let mut counters = Arc::new(relay::counters_for(&config, &sides).await?);
    let partitions = counters.partitions.len() as i32;
    let batch = config.batch_max_records;
    let source_rate = match cli.bench_records {
        Some(n) => {
            let rate = bench::produce(&config.source, &sides.source, partitions, n, batch).await?;
            // Fresh counters: the relay's clock starts after the source was produced.
            counters = Arc::new(relay::counters_for(&config, &sides).await?);
            Some(rate)
        }
        None => None,
    };
    let stats = Arc::clone(&counters);
    let snapshot: stats_http::Snapshot =
        Arc::new(move || serde_json::to_value(stats.summary()).unwrap_or_default());
    stats_http::publish(
        "relay",
        cli.stats_bind.as_deref(),
        stats_http::router(snapshot.clone()),
        snapshot,
    )
    .await?;
    let summary = relay::run(&config, &sides, counters, shutdown.clone()).await?;
    let (Some(n), Some(source_rate)) = (cli.bench_records, source_rate) else {
        println!("{}", serde_json::to_string(&summary)?);
        return Ok(());
    };
    let target_rate = bench::produce(&config.target, &sides.target, partitions, n, batch).await?;
    let figures = bench::BenchFigures {
        records_per_partition: n,
        partitions,
        batch_records: batch,
        source_produce_records_per_s: source_rate,
        relay_records_per_s: summary.records_per_s,
        target_produce_records_per_s: target_rate,
    };
    let mut out = serde_json::to_value(&summary)?;
    out["bench"] = serde_json::to_value(&figures)?;
    println!("{out}");
    Ok(())
}
