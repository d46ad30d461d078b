//! `publisher`: writes keyed user events to the `events` topic at a steady rate.
//!
//! ```text
//! publisher [--engine booblik|jetstream] [--broker host:port] [--nats-url nats://h:p,…]
//!           [--stats-bind addr] [--topic events]
//!           [--rate 100] [--users 50] [--count N] [--ack written|forced]
//! ```
//!
//! On JetStream a missing topic is created (`--jetstream-partitions 3`, `--jetstream-replicas 3`).
//!
//! Runs until `--count` records were sent, or until Ctrl-C/SIGTERM; either way it waits for every
//! outstanding delivery, then prints its final stats as one JSON line on stdout. `GET /stats`
//! (with `--stats-bind`): `sent`, `per_partition`, `last_offset`, `failed`,
//! `failed_per_partition`, `attempted`. A failed record got no acknowledgement: whether the
//! engine wrote it is unknown. The code that matters is `booblik_samples::events::publisher`.

use std::process::ExitCode;
use std::sync::Arc;

use booblik_samples::engine::Ack;
use booblik_samples::events::publisher::{PublisherConfig, PublisherStats, run_publisher};
use booblik_samples::support::cli::CommonArgs;
use booblik_samples::support::shutdown::Shutdown;
use booblik_samples::support::{logging, stats_http};
use clap::Parser;

#[derive(Debug, Parser)]
#[command(
    name = "publisher",
    version,
    about = "Write keyed user events at a steady rate"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// Records per second (0: as fast as the producer allows).
    #[arg(long, default_value_t = 100)]
    rate: u32,
    /// Number of distinct users (record keys).
    #[arg(long, default_value_t = 50)]
    users: u32,
    /// Stop after this many records (default: run until stopped).
    #[arg(long)]
    count: Option<u64>,
    /// When the engine acknowledges: written, or forced (booblik: after fsync; JetStream: the
    /// same PubAck, see docs/jetstream.md).
    #[arg(long, default_value = "written")]
    ack: Ack,
}

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    logging::init();
    let cli = Cli::parse();
    let shutdown = Shutdown::new().trigger_on_signals();
    let engine = cli.common.open_engine(&shutdown).await?;

    let stats = PublisherStats::new();
    let snapshot: stats_http::Snapshot = {
        let stats = Arc::clone(&stats);
        Arc::new(move || stats.to_json())
    };
    stats_http::publish(
        "publisher",
        cli.common.stats_bind.as_deref(),
        stats_http::router(Arc::clone(&snapshot)),
        snapshot,
    )
    .await?;

    let config = PublisherConfig {
        topic: cli.common.topic,
        rate_per_s: cli.rate,
        users: cli.users,
        count: cli.count,
        ack: cli.ack,
    };
    let last = run_publisher(engine, config, Arc::clone(&stats), shutdown).await?;
    println!("{}", serde_json::to_string(&last)?);
    Ok(if last.failed == 0 {
        ExitCode::SUCCESS
    } else {
        tracing::error!(
            failed = last.failed,
            "some records were not acknowledged (whether they were written is unknown)"
        );
        ExitCode::FAILURE
    })
}
