//! `follow-consumer`: follows partitions of the `events` topic, saving its position in a
//! `FileOffsetStore` after each handled batch; a restart resumes from the saved position.
//!
//! ```text
//! follow-consumer [--engine booblik|jetstream] [--broker host:port] [--nats-url nats://h:p,…]
//!                 [--stats-bind addr] [--topic events]
//!                 [--partitions 0,1,2] [--consumer-name follow] [--offsets-dir ./offsets]
//!                 [--fetch-max-bytes N] [--max-wait-ms N]
//! ```
//!
//! With no saved position a partition starts at the earliest offset. Positions are the engine's
//! offsets (JetStream: stream sequences), so keep one `--offsets-dir` per engine. Ctrl-C/SIGTERM stop it
//! cleanly: the batch in hand is handled and checkpointed first. `GET /stats` (with
//! `--stats-bind`) and the periodic log line carry `resumed_from` (per partition: the saved
//! position this run started from, or `null`), `next_offset`, `checkpointed`, `records`,
//! `per_partition`, `lag`, `duplicates`, `order_violations`, `skipped_offsets`. The code that
//! matters is `booblik_samples::events::follow`.
//!
//! Exit status: 0 after a clean stop with no violations; 1 on a fatal error or when per-user order
//! was violated or offsets were skipped.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use booblik_offset_store::{FileOffsetStore, OffsetStore};
use booblik_samples::engine::{MAX_READ_WAIT, ReadLimits};
use booblik_samples::events::follow::{FollowConfig, FollowState, run_follow};
use booblik_samples::support::cli::CommonArgs;
use booblik_samples::support::shutdown::Shutdown;
use booblik_samples::support::{logging, stats_http};
use clap::Parser;
use serde_json::json;

/// `--fetch-max-bytes` by default.
const DEFAULT_FETCH_MAX_BYTES: usize = 1024 * 1024;
/// `--max-wait-ms` by default.
const DEFAULT_MAX_WAIT_MS: u64 = 500;

#[derive(Debug, Parser)]
#[command(
    name = "follow-consumer",
    version,
    about = "Follow partitions, checkpointing after each batch"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// Partitions to follow, e.g. 0,1,2 (default: all).
    #[arg(long, value_delimiter = ',')]
    partitions: Option<Vec<i32>>,
    /// The name positions are saved under.
    #[arg(long, env = "BOOBLIK_CONSUMER_NAME", default_value = "follow")]
    consumer_name: String,
    /// Directory of the offset store.
    #[arg(long, env = "BOOBLIK_OFFSETS_DIR", default_value = "./offsets")]
    offsets_dir: PathBuf,
    /// Largest read: bounds one batch, and so what a crash can make the consumer repeat.
    #[arg(long, default_value_t = DEFAULT_FETCH_MAX_BYTES)]
    fetch_max_bytes: usize,
    /// How long a read waits at the engine for new records.
    #[arg(long, default_value_t = DEFAULT_MAX_WAIT_MS)]
    max_wait_ms: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    logging::init();
    let cli = Cli::parse();
    let shutdown = Shutdown::new().trigger_on_signals();
    let store: Arc<dyn OffsetStore> = Arc::new(
        FileOffsetStore::open(&cli.offsets_dir)
            .await
            .with_context(|| format!("cannot open offsets in {}", cli.offsets_dir.display()))?,
    );
    let engine = cli.common.open_engine(&shutdown).await?;

    let state = FollowState::new();
    let snapshot: stats_http::Snapshot = {
        let (state, name, topic) = (
            Arc::clone(&state),
            cli.consumer_name.clone(),
            cli.common.topic.clone(),
        );
        Arc::new(move || {
            let mut stats = serde_json::to_value(state.snapshot()).expect("stats serialise");
            stats["consumer_name"] = json!(name);
            stats["topic"] = json!(topic);
            stats
        })
    };
    stats_http::publish(
        "follow-consumer",
        cli.common.stats_bind.as_deref(),
        stats_http::router(Arc::clone(&snapshot)),
        Arc::clone(&snapshot),
    )
    .await?;

    let config = FollowConfig {
        topic: cli.common.topic,
        partitions: cli.partitions,
        consumer_name: cli.consumer_name,
        limits: ReadLimits {
            max_bytes: cli.fetch_max_bytes.max(1),
            wait: Duration::from_millis(cli.max_wait_ms).min(MAX_READ_WAIT),
            ..ReadLimits::default()
        },
    };
    let outcome = run_follow(engine, store, config, Arc::clone(&state), shutdown).await;
    let last = state.snapshot();
    tracing::info!(stats = %snapshot(), "follow consumer stopped");
    outcome?;
    if last.order_violations + last.skipped_offsets > 0 {
        tracing::error!(
            order_violations = last.order_violations,
            skipped_offsets = last.skipped_offsets,
            "the log broke its promises to this consumer (see the errors above)"
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
