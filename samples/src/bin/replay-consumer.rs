//! `replay-consumer`: reads the history of the `events` topic up to the high watermark and exits
//! with a JSON summary on stdout (per-partition and per-user counts, and the checks).
//!
//! ```text
//! replay-consumer [--engine booblik|jetstream] [--broker host:port] [--nats-url nats://h:p,…]
//!                 [--stats-bind addr] [--topic events] [--partitions 0,1,2]
//! ```
//!
//! Stores no position: every run reads from the log start. Exit status 1 when per-user order was
//! violated or offsets were skipped. With `--stats-bind`, `GET /stats` says whether the replay is
//! still running and, once done, carries the summary. The code that matters is
//! `booblik_samples::events::replay`.

use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};

use booblik_samples::engine::ReadLimits;
use booblik_samples::events::replay::{ReplayConfig, replay};
use booblik_samples::support::cli::CommonArgs;
use booblik_samples::support::shutdown::Shutdown;
use booblik_samples::support::{logging, stats_http};
use clap::Parser;
use serde_json::{Value, json};

#[derive(Debug, Parser)]
#[command(
    name = "replay-consumer",
    version,
    about = "Replay history to the high watermark and summarise it"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// Partitions to replay, e.g. 0,1,2 (default: all).
    #[arg(long, value_delimiter = ',')]
    partitions: Option<Vec<i32>>,
}

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    logging::init();
    let cli = Cli::parse();
    let shutdown = Shutdown::new().trigger_on_signals();
    let engine = cli.common.open_engine(&shutdown).await?;

    let status = Arc::new(Mutex::new(json!({ "phase": "replaying" })));
    if let Some(bind) = cli.common.stats_bind.as_deref() {
        let status = Arc::clone(&status);
        let snapshot: stats_http::Snapshot = Arc::new(move || {
            status
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
        });
        stats_http::serve_router(bind, stats_http::router(snapshot)).await?;
    }

    let config = ReplayConfig {
        topic: cli.common.topic,
        partitions: cli.partitions,
        limits: ReadLimits::default(),
    };
    let summary = tokio::select! {
        summary = replay(engine.as_ref(), &config) => summary?,
        () = shutdown.triggered() => anyhow::bail!("stopped before the replay finished"),
    };
    let json: Value = serde_json::to_value(&summary)?;
    *status.lock().unwrap_or_else(PoisonError::into_inner) =
        json!({ "phase": "done", "summary": json });
    println!("{}", serde_json::to_string_pretty(&json)?);
    if summary.violations > 0 {
        tracing::error!(
            violations = summary.violations,
            "per-user order violated or offsets skipped (see the errors above)"
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
