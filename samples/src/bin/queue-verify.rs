//! `queue-verify`: replays both logs of the task queue and checks its promises.
//!
//! Prints a JSON document `{ "clean", "summary", "violations" }` (see `queue::verify`) and exits
//! with status 1 if any invariant is broken — every task completed exactly once under its
//! current token, none lost, every verdict agreeing with an independent reference model.
//!
//! ```text
//! queue-verify --broker 127.0.0.1:9092 --lost-after-ms 15000
//! queue-verify --engine jetstream --nats-url nats://127.0.0.1:4222 --lost-after-ms 0
//! ```

use std::num::NonZeroU32;
use std::process::ExitCode;

use booblik_samples::queue::state::{
    DEFAULT_MAX_EXPIRED_LEASES, DEFAULT_MAX_LEASE_MS, QueueConfig,
};
use booblik_samples::queue::verify::{VerifyConfig, verify_encoded};
use booblik_samples::queue::worker::cli::QueueArgs;
use booblik_samples::queue::worker::{
    DEFAULT_CONNECT_WAIT_MS, DEFAULT_LEASE_MS, read_raw_logs, wall_clock_ms,
};
use booblik_samples::support::logging;
use booblik_samples::support::shutdown::Shutdown;
use clap::Parser;
use serde_json::json;

/// Default `--lost-after-ms`: three default leases. A task idle that long with nobody holding it
/// is lost, not merely waiting for the next worker.
const DEFAULT_LOST_AFTER_MS: u64 = 3 * DEFAULT_LEASE_MS;

/// Verify the task queue's logs.
#[derive(Debug, Parser)]
#[command(name = "queue-verify", version, about)]
struct Cli {
    #[command(flatten)]
    queue: QueueArgs,
    /// Expired leases after which a task is dead-lettered; must match the workers.
    #[arg(long, default_value_t = DEFAULT_MAX_EXPIRED_LEASES)]
    max_expired_leases: NonZeroU32,
    /// Longest lease a claim or extend may ask for; longer ones are void. Must match every
    /// other worker and the verifier.
    #[arg(long, default_value_t = DEFAULT_MAX_LEASE_MS)]
    max_lease_ms: u64,
    /// An unfinished task nobody holds counts as lost once idle this long (0 after a drained
    /// run; a few leases for a live queue).
    #[arg(long, default_value_t = DEFAULT_LOST_AFTER_MS)]
    lost_after_ms: u64,
    /// How long to keep trying to reach the broker at start (`--engine booblik`).
    #[arg(long, default_value_t = DEFAULT_CONNECT_WAIT_MS)]
    connect_wait_ms: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    logging::init();
    let cli = Cli::parse();
    if cli.queue.stats_bind.is_some() {
        tracing::info!("--stats-bind is ignored: queue-verify runs once and exits");
    }
    let shutdown = Shutdown::new().trigger_on_signals();
    let engine = cli
        .queue
        .open_engine(cli.connect_wait_ms, &shutdown)
        .await?;
    let (tasks, claims) =
        read_raw_logs(&engine, &cli.queue.tasks_topic, &cli.queue.claims_topic).await?;
    let config = VerifyConfig {
        queue: QueueConfig {
            max_expired_leases: cli.max_expired_leases,
            max_lease_ms: cli.max_lease_ms,
        },
        as_of_ms: wall_clock_ms(),
        lost_after_ms: cli.lost_after_ms,
    };
    let report = verify_encoded(&tasks, &claims, &config);
    let clean = report.is_clean();
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({
            "clean": clean,
            "tasks_records": tasks.len(),
            "claims_records": claims.len(),
            "summary": report.summary,
            "violations": report.violations,
        }))?
    );
    if clean {
        tracing::info!(
            tasks = report.summary.tasks,
            completed = report.summary.completed,
            "every invariant holds"
        );
        Ok(ExitCode::SUCCESS)
    } else {
        tracing::error!(
            violations = report.violations.len(),
            "invariants are broken"
        );
        Ok(ExitCode::FAILURE)
    }
}
