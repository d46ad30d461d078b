//! `queue-submit`: enqueues tasks for the task queue.
//!
//! Appends `--count` task records (random payloads of `--payload-bytes`) to the tasks topic,
//! `--interval-ms` apart (0: as fast as the broker acknowledges, up to
//! `MAX_IN_FLIGHT_SUBMITS` at a time), and prints a JSON summary with the first and last task.
//!
//! ```text
//! queue-submit --broker 127.0.0.1:9092 --count 100 --interval-ms 50
//! queue-submit --engine jetstream --nats-url nats://127.0.0.1:4222 --count 100
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use booblik_client::AckPolicy;
use booblik_samples::engine::{Ack, PartitionLog};
use booblik_samples::queue::worker::cli::{AckArg, QueueArgs};
use booblik_samples::queue::worker::{DEFAULT_CONNECT_WAIT_MS, open_tasks_log, submit_task_to};
use booblik_samples::support::logging;
use booblik_samples::support::shutdown::Shutdown;
use booblik_samples::support::stats_http::{Snapshot, serve};
use clap::Parser;
use futures::{StreamExt, TryStreamExt};
use rand::RngCore;
use serde_json::json;
use uuid::Uuid;

/// Submissions in flight at once when `--interval-ms` is 0 (the tasks partition pipelines
/// them).
const MAX_IN_FLIGHT_SUBMITS: usize = 64;
/// Largest `--payload-bytes`: an encoded task must stay below the 1 MiB a worker's follower fetches
/// at once (`ConsumerConfig::max_bytes`).
const MAX_PAYLOAD_BYTES: usize = 512 * 1024;

/// Enqueue tasks.
#[derive(Debug, Parser)]
#[command(name = "queue-submit", version, about)]
struct Cli {
    #[command(flatten)]
    queue: QueueArgs,
    /// How many tasks to submit.
    #[arg(long, default_value_t = 1)]
    count: u64,
    /// Pause between two submissions (0: pipelined, as fast as acknowledged).
    #[arg(long, default_value_t = 0)]
    interval_ms: u64,
    /// Size of each task's random payload.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=MAX_PAYLOAD_BYTES as u64))]
    payload_bytes: u64,
    /// Ack policy of the task appends.
    #[arg(long, value_enum, default_value_t = AckArg::Forced)]
    ack: AckArg,
    /// Print every submitted task as `task_id offset` on stdout, before the summary.
    #[arg(long)]
    print_ids: bool,
    /// How long to keep trying to reach the broker at start (`--engine booblik`).
    #[arg(long, default_value_t = DEFAULT_CONNECT_WAIT_MS)]
    connect_wait_ms: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    logging::init();
    let cli = Cli::parse();
    let shutdown = Shutdown::new().trigger_on_signals();
    let engine = cli
        .queue
        .open_engine(cli.connect_wait_ms, &shutdown)
        .await?;
    let tasks_log = open_tasks_log(engine.as_ref(), &cli.queue.tasks_topic).await?;
    let submitted = Arc::new(AtomicU64::new(0));
    if let Some(bind) = cli.queue.stats_bind {
        let submitted = Arc::clone(&submitted);
        let snapshot: Snapshot =
            Arc::new(move || json!({ "submitted": submitted.load(Ordering::Relaxed) }));
        serve(bind, snapshot).await?;
    }

    let started = Instant::now();
    let ack = Ack::from(cli.ack);
    let submit_one = |_| {
        let tasks_log: &dyn PartitionLog = tasks_log.as_ref();
        let submitted = Arc::clone(&submitted);
        let payload_bytes = cli.payload_bytes as usize;
        async move {
            let mut payload = vec![0u8; payload_bytes];
            rand::rng().fill_bytes(&mut payload);
            let task = submit_task_to(tasks_log, payload, ack).await?;
            submitted.fetch_add(1, Ordering::Relaxed);
            anyhow::Ok(task)
        }
    };
    let tasks: Vec<(Uuid, i64)> = if cli.interval_ms == 0 {
        futures::stream::iter(0..cli.count)
            .map(submit_one)
            .buffered(MAX_IN_FLIGHT_SUBMITS)
            .try_collect()
            .await?
    } else {
        let mut tasks = Vec::new();
        let mut tick = tokio::time::interval(Duration::from_millis(cli.interval_ms));
        for n in 0..cli.count {
            tick.tick().await;
            tasks.push(submit_one(n).await?);
        }
        tasks
    };
    let elapsed_ms = started.elapsed().as_millis() as u64;

    if cli.print_ids {
        for (task_id, offset) in &tasks {
            println!("{task_id} {offset}");
        }
    }
    let describe = |task: Option<&(Uuid, i64)>| {
        task.map(|(task_id, offset)| json!({ "task_id": task_id, "offset": offset }))
    };
    let summary = json!({
        "topic": cli.queue.tasks_topic,
        "submitted": tasks.len(),
        "ack": AckPolicy::from(cli.ack).name(),
        "elapsed_ms": elapsed_ms,
        "first": describe(tasks.first()),
        "last": describe(tasks.last()),
    });
    tracing::info!(submitted = tasks.len(), elapsed_ms, "tasks submitted");
    println!("{summary}");
    Ok(())
}
