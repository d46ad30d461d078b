//! `projection`: folds the `events` topic into a read model (events per user, top users) and
//! answers queries over HTTP.
//!
//! ```text
//! projection [--engine booblik|jetstream] [--broker host:port] [--nats-url nats://h:p,…]
//!     [--stats-bind addr] [--topic events] [--top 10]
//!     [--snapshot FILE] [--snapshot-every-ms 1000]
//! ```
//!
//! On start it replays every partition from the log start, then follows each from where its replay
//! ended. Without `--snapshot` it stores no position — the state lives in memory, so the position
//! does too, and a restart rebuilds both (`booblik_samples::events::projection` explains why).
//! With `--snapshot FILE` it saves the model together with its positions in that one file every
//! `--snapshot-every-ms` (and at a clean stop), and a restart restores it and catches up from
//! there. With
//! `--stats-bind`: `GET /stats` (phase, events, users, `next_offset`, `top_users`) and
//! `GET /users/{id}` (one user's view, 404 when unknown).

use std::process::ExitCode;
use std::sync::Arc;

use booblik_samples::engine::ReadLimits;
use booblik_samples::events::projection::http::{routes, stats_json};
use booblik_samples::events::projection::snapshot::{DEFAULT_SNAPSHOT_EVERY_MS, SnapshotConfig};
use booblik_samples::events::projection::{
    DEFAULT_TOP_USERS, ProjectionConfig, ProjectionState, run_projection,
};
use booblik_samples::support::cli::CommonArgs;
use booblik_samples::support::shutdown::Shutdown;
use booblik_samples::support::{logging, stats_http};
use clap::Parser;

#[derive(Debug, Parser)]
#[command(
    name = "projection",
    version,
    about = "Fold events into a read model and answer queries"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// Users in the top list.
    #[arg(long, default_value_t = DEFAULT_TOP_USERS)]
    top: usize,
    /// Save the model and its positions in this one file, and restore it on start.
    #[arg(long, env = "BOOBLIK_PROJECTION_SNAPSHOT")]
    snapshot: Option<std::path::PathBuf>,
    /// Interval between snapshots.
    #[arg(long, default_value_t = DEFAULT_SNAPSHOT_EVERY_MS)]
    snapshot_every_ms: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    logging::init();
    let cli = Cli::parse();
    let shutdown = Shutdown::new().trigger_on_signals();
    let engine = cli.common.open_engine(&shutdown).await?;

    let state = ProjectionState::new();
    let snapshot: stats_http::Snapshot = {
        let (state, top) = (Arc::clone(&state), cli.top);
        Arc::new(move || stats_json(&state, top))
    };
    stats_http::publish(
        "projection",
        cli.common.stats_bind.as_deref(),
        routes(Arc::clone(&state), cli.top),
        Arc::clone(&snapshot),
    )
    .await?;

    let config = ProjectionConfig {
        topic: cli.common.topic,
        limits: ReadLimits::default(),
        snapshot: cli.snapshot.map(|path| SnapshotConfig {
            path,
            every_ms: cli.snapshot_every_ms,
        }),
    };
    run_projection(engine, config, Arc::clone(&state), shutdown).await?;
    let last = state.snapshot(cli.top);
    tracing::info!(stats = %snapshot(), "projection stopped");
    if last.violations > 0 {
        tracing::error!(
            violations = last.violations,
            "per-user order violated or offsets skipped"
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
