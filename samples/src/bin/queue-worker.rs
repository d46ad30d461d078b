//! `queue-worker`: one worker of the task queue (claims and leases over the log).
//!
//! Follows `tasks` and `claims` from the beginning, claims claimable tasks, works on the ones it
//! wins (simulated: sleeps `--work-ms`), extends its lease every `lease / 3`, and commits a done.
//! Logs every verdict and completion; `GET /stats` on `--stats-bind` shows its counters and the
//! task in hand. Ctrl-C or SIGTERM stops it; a task in hand is then released at once
//! (`--protocol-level 2`) or taken over by another worker after its lease.
//!
//! ```text
//! queue-worker --broker 127.0.0.1:9092 --lease-ms 5000 --work-ms 1000 --pick random
//! queue-worker --engine jetstream --nats-url nats://127.0.0.1:4222 --lease-ms 20000
//! ```

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use booblik_samples::queue::state::{
    DEFAULT_MAX_EXPIRED_LEASES, DEFAULT_MAX_LEASE_MS, QueueConfig,
};
use booblik_samples::queue::worker::cli::{AckArg, PickArg, ProtocolArg, QueueArgs};
use booblik_samples::queue::worker::{
    DEFAULT_CONNECT_WAIT_MS, DEFAULT_FOLLOW_MAX_WAIT_MS, DEFAULT_LEASE_MS, DEFAULT_WORK_MS, Worker,
    WorkerConfig,
};
use booblik_samples::support::logging;
use booblik_samples::support::shutdown::Shutdown;
use booblik_samples::support::stats_http::{Snapshot, log_periodically, serve};
use clap::Parser;
use serde_json::{Value, json};
use uuid::Uuid;

/// How often the stats line is logged.
const STATS_LOG_EVERY_MS: u64 = 10_000;

/// A task-queue worker.
#[derive(Debug, Parser)]
#[command(name = "queue-worker", version, about)]
struct Cli {
    #[command(flatten)]
    queue: QueueArgs,
    /// Lease asked for by every claim and extend.
    #[arg(long, default_value_t = DEFAULT_LEASE_MS)]
    lease_ms: u64,
    /// Simulated work per task.
    #[arg(long, default_value_t = DEFAULT_WORK_MS)]
    work_ms: u64,
    /// Interval between extends while working; 0 means lease / 3.
    #[arg(long, default_value_t = 0)]
    extend_every_ms: u64,
    /// How to choose among claimable tasks.
    #[arg(long, value_enum, default_value_t = PickArg::Random)]
    pick: PickArg,
    /// This worker's id (a random v4 UUID by default). Never run two processes with one worker
    /// id: the protocol tells workers apart by it, and two such processes could both work
    /// under one lease.
    #[arg(long)]
    worker_id: Option<Uuid>,
    /// Expired leases after which a task is dead-lettered; must match every other worker.
    #[arg(long, default_value_t = DEFAULT_MAX_EXPIRED_LEASES)]
    max_expired_leases: NonZeroU32,
    /// Longest lease a claim or extend may ask for; longer ones are void. Must match every
    /// other worker and the verifier.
    #[arg(long, default_value_t = DEFAULT_MAX_LEASE_MS)]
    max_lease_ms: u64,
    /// Ack policy of claims, extends and dones.
    #[arg(long, value_enum, default_value_t = AckArg::Forced)]
    claim_ack: AckArg,
    /// Long-poll wait of the followers' FETCH requests.
    #[arg(long, default_value_t = DEFAULT_FOLLOW_MAX_WAIT_MS)]
    follow_max_wait_ms: u64,
    /// Largest difference between two workers' clocks to allow for: the worker stops working at
    /// lease - this (default: a tenth of the lease). Must be below the lease.
    #[arg(long)]
    max_clock_skew_ms: Option<u64>,
    /// Which record kinds to write: 1 (claims, extends, dones) or 2 (also a release at a clean
    /// shutdown). Raise to 2 only once every worker and verifier runs a version that reads it.
    #[arg(long, value_enum, default_value_t = ProtocolArg::V1)]
    protocol_level: ProtocolArg,
    /// How long to keep trying to reach the broker at start (`--engine booblik`).
    #[arg(long, default_value_t = DEFAULT_CONNECT_WAIT_MS)]
    connect_wait_ms: u64,
    /// Append each done on its own, not in one batch with the next claim (costs a round trip
    /// and an fsync per task; kept for comparison).
    #[arg(long)]
    separate_dones: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    logging::init();
    let cli = Cli::parse();
    let shutdown = Shutdown::new().trigger_on_signals();
    let config = WorkerConfig {
        worker_id: cli.worker_id.unwrap_or_else(Uuid::new_v4),
        tasks_topic: cli.queue.tasks_topic.clone(),
        claims_topic: cli.queue.claims_topic.clone(),
        lease_ms: cli.lease_ms,
        work_ms: cli.work_ms,
        extend_every_ms: cli.extend_every_ms,
        pick: cli.pick.into(),
        queue: QueueConfig {
            max_expired_leases: cli.max_expired_leases,
            max_lease_ms: cli.max_lease_ms,
        },
        claim_ack: cli.claim_ack.into(),
        follow_max_wait_ms: cli.follow_max_wait_ms,
        max_clock_skew_ms: cli.max_clock_skew_ms,
        protocol: cli.protocol_level.into(),
        done_with_next_claim: !cli.separate_dones,
    };
    config.validate()?;
    let engine = cli
        .queue
        .open_engine(cli.connect_wait_ms, &shutdown)
        .await?;
    let worker = Arc::new(
        Worker::start(engine, config)
            .await
            .context("cannot start the worker")?,
    );

    let snapshot: Snapshot = {
        let worker = Arc::clone(&worker);
        Arc::new(move || stats_json(&worker))
    };
    if let Some(bind) = cli.queue.stats_bind {
        serve(bind, Arc::clone(&snapshot)).await?;
    }
    log_periodically(
        "queue-worker",
        Duration::from_millis(STATS_LOG_EVERY_MS),
        snapshot,
    );

    let stats = worker.run(shutdown.triggered()).await?;
    println!("{}", serde_json::to_string(&stats)?);
    Ok(())
}

/// The `/stats` document: the worker's id, the task in hand, and its counters.
fn stats_json(worker: &Worker) -> Value {
    let current_task = worker
        .current_task()
        .map(|(task_id, token)| json!({ "task_id": task_id, "token": token }));
    let mut stats = serde_json::to_value(worker.stats()).unwrap_or_else(|_| json!({}));
    if let Value::Object(fields) = &mut stats {
        fields.insert("worker_id".to_owned(), json!(worker.worker_id()));
        fields.insert("current_task".to_owned(), json!(current_task));
        fields.insert(
            "undecodable_records".to_owned(),
            json!(worker.undecodable_records()),
        );
    }
    stats
}
