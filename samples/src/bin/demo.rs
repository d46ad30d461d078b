//! `demo`: both layers in one process — an embedded broker; a replay of what earlier runs left,
//! the publisher, a follow consumer per partition and the projection (layer 1); a task submitter
//! and three queue workers racing for tasks through the claims log, committing their effects
//! through one shared fencing sink (layer 2) — with a live table, and cross-checks at the end
//! (including `queue-verify`'s invariants over the tasks and claims logs, and the sink's effects).
//!
//! ```text
//! cargo run --release -p booblik-samples --bin demo -- [--data-dir ./demo-data] [--bind 127.0.0.1:0]
//!     [--duration-s N] [--rate 100] [--users 50] [--stats-bind addr] [--top 3]
//!     [--task-rate 2] [--workers 3] [--lease-ms 2000] [--work-ms 400]
//! ```
//!
//! The broker's log goes to `<data-dir>/broker` and the follow consumers' positions to
//! `<data-dir>/offsets`; both survive the demo, so running it again shows the consumers resuming
//! (`started from saved position …`) and the projection rebuilding from the whole log. `rm -rf demo-data` starts
//! afresh. Ctrl-C (or `--duration-s`) stops it: the publisher first, then — once every reader has
//! caught up with the log — the readers, each finishing and checkpointing its batch in hand. Then a
//! replay checks what everyone saw; the exit status is 0 only when every check passed.
//!
//! Every part is a library function from `booblik_samples::events` or `booblik_samples::queue`,
//! the same code the stand-alone binaries run. To add a part, spawn it with [`Demo::writer`] (it produces) or [`Demo::reader`]
//! (it consumes and has a notion of "caught up"), giving it a one-line status for the table.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::future::Future;
use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context;
use booblik_client::{AckPolicy, Client, ConnectionConfig, ConsumerConfig};
use booblik_offset_store::{FileOffsetStore, OffsetStore};
use booblik_samples::events::crosscheck::{
    Check, follow_matches_replay, log_grew_by_published, projection_matches_replay,
};
use booblik_samples::events::follow::{FollowConfig, FollowState, run_follow};
use booblik_samples::events::projection::http::{routes, stats_json};
use booblik_samples::events::projection::{ProjectionConfig, ProjectionState, run_projection};
use booblik_samples::events::publisher::{PublisherConfig, PublisherStats, run_publisher};
use booblik_samples::events::replay::{ReplayConfig, replay};
use booblik_samples::queue::state::{QueueConfig, QueueState, TaskStatus};
use booblik_samples::queue::verify::{VerifyConfig, verify};
use booblik_samples::queue::worker::{
    Assignment, ResultSink, WorkFn, Worker, WorkerConfig, read_logs, result_of, submit_task,
    wall_clock_ms,
};
use booblik_samples::support::shutdown::Shutdown;
use booblik_samples::support::{embedded_broker, logging, stats_http};
use clap::Parser;
use futures::FutureExt;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The events topic.
const TOPIC: &str = "events";
/// The follow consumers' name in the offset store.
const CONSUMER_NAME: &str = "demo-follow";
/// How often the table is redrawn.
const REFRESH_MS: u64 = 1_000;
/// After the writers stop, how long the readers get to catch up with the log.
const CATCH_UP_LIMIT_MS: u64 = 15_000;

#[derive(Debug, Parser)]
#[command(
    name = "demo",
    version,
    about = "The events samples and the task queue in one process, on an embedded broker"
)]
struct Cli {
    /// Directory for the broker's log (`broker/`) and the consumers' positions (`offsets/`).
    #[arg(long, default_value = "./demo-data")]
    data_dir: PathBuf,
    /// Address of the embedded broker (port 0: any free port), e.g. 127.0.0.1:9092 to poke at it
    /// with the `booblik` CLI.
    #[arg(long, default_value = "127.0.0.1:0")]
    bind: SocketAddr,
    /// Stop after this many seconds (default: run until Ctrl-C).
    #[arg(long)]
    duration_s: Option<u64>,
    /// Events per second.
    #[arg(long, default_value_t = 100)]
    rate: u32,
    /// Number of distinct users.
    #[arg(long, default_value_t = 50)]
    users: u32,
    /// Serve the projection's queries (`GET /stats`, `GET /users/{id}`) on this address.
    #[arg(long, env = "BOOBLIK_STATS_BIND")]
    stats_bind: Option<String>,
    /// Users shown in the table's top list.
    #[arg(long, default_value_t = 3)]
    top: usize,
    /// Tasks submitted to the queue per second (0: no task queue).
    #[arg(long, default_value_t = 2)]
    task_rate: u32,
    /// Queue workers racing for tasks.
    #[arg(long, default_value_t = 3)]
    workers: usize,
    /// Lease of a claimed task, in milliseconds.
    #[arg(long, default_value_t = 2_000)]
    lease_ms: u64,
    /// Simulated work per task, in milliseconds.
    #[arg(long, default_value_t = 400)]
    work_ms: u64,
}

/// A one-line status for the table.
type Status = Box<dyn Fn() -> String + Send + Sync>;
/// Whether a reader has read up to the given high watermarks of the events topic.
type CaughtUp = Box<dyn Fn(&BTreeMap<i32, i64>) -> bool + Send + Sync>;

/// A running part of the demo.
struct Component {
    name: String,
    stop: Shutdown,
    /// `None` once stopped (the status stays, for the final table).
    task: Option<JoinHandle<anyhow::Result<()>>>,
    status: Status,
    caught_up: CaughtUp,
}

/// The running parts: writers stop first, readers once they have caught up.
#[derive(Default)]
struct Demo {
    writers: Vec<Component>,
    readers: Vec<Component>,
}

impl Demo {
    /// Starts a part that writes to the log.
    fn writer<F, Fut>(&mut self, name: &str, status: Status, run: F)
    where
        F: FnOnce(Shutdown) -> Fut,
        Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        let component = Self::spawn(name, status, Box::new(|_| true), run);
        self.writers.push(component);
    }

    /// Starts a part that reads the log.
    fn reader<F, Fut>(&mut self, name: &str, status: Status, caught_up: CaughtUp, run: F)
    where
        F: FnOnce(Shutdown) -> Fut,
        Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        let component = Self::spawn(name, status, caught_up, run);
        self.readers.push(component);
    }

    fn spawn<F, Fut>(name: &str, status: Status, caught_up: CaughtUp, run: F) -> Component
    where
        F: FnOnce(Shutdown) -> Fut,
        Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        let stop = Shutdown::new();
        Component {
            name: name.to_owned(),
            task: Some(tokio::spawn(run(stop.clone()))),
            stop,
            status,
            caught_up,
        }
    }

    fn all(&self) -> impl Iterator<Item = &Component> {
        self.writers.iter().chain(&self.readers)
    }

    /// A part that ended although nobody asked it to stop (it failed).
    fn ended_on_its_own(&self) -> Option<&str> {
        self.all()
            .find(|c| {
                c.task.as_ref().is_some_and(JoinHandle::is_finished) && !c.stop.is_triggered()
            })
            .map(|c| c.name.as_str())
    }

    fn table(&self) -> Vec<String> {
        self.all()
            .map(|c| format!("{:<14}{}", c.name, (c.status)()))
            .collect()
    }

    /// Stops every part of `parts` and collects how each ended.
    async fn stop(parts: &mut [Component]) -> Vec<(String, anyhow::Result<()>)> {
        for part in parts.iter() {
            part.stop.trigger();
        }
        let mut ended = Vec::new();
        for part in parts.iter_mut() {
            if let Some(task) = part.task.take() {
                let outcome = task
                    .await
                    .unwrap_or_else(|panic| Err(anyhow::anyhow!("panicked: {panic}")));
                ended.push((part.name.clone(), outcome));
            }
        }
        ended
    }
}

/// Redraws the table in place on a terminal; appends it otherwise (logs, tests).
struct Screen {
    redraw: bool,
    lines_drawn: usize,
}

impl Screen {
    fn draw(&mut self, elapsed: Duration, lines: &[String]) {
        let mut out = std::io::stdout().lock();
        if self.redraw && self.lines_drawn > 0 {
            // Cursor up over the previous table, then clear to the end of the screen.
            let _ = write!(out, "\x1b[{}A\x1b[J", self.lines_drawn);
        }
        let _ = writeln!(out, "[{:>4}s]", elapsed.as_secs());
        for line in lines {
            let _ = writeln!(out, "  {line}");
        }
        if !self.redraw {
            let _ = writeln!(out);
        }
        let _ = out.flush();
        self.lines_drawn = lines.len() + 1;
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    // Warnings only: the table is the demo's output. RUST_LOG=info shows every component's log.
    logging::init_with_default("warn");
    let cli = Cli::parse();
    let interrupt = Shutdown::new().trigger_on_signals();

    let broker_dir = cli.data_dir.join("broker");
    let offsets_dir = cli.data_dir.join("offsets");
    std::fs::create_dir_all(&broker_dir)
        .with_context(|| format!("cannot create {}", broker_dir.display()))?;
    let broker =
        embedded_broker::start(&broker_dir, cli.bind, embedded_broker::DEMO_TOPICS).await?;
    let addr = broker.local_addr().to_string();
    let client = Client::connect(&addr, ConnectionConfig::default()).await?;
    let store: Arc<dyn OffsetStore> = Arc::new(FileOffsetStore::open(&offsets_dir).await?);

    println!("booblik demo");
    println!(
        "  broker      {addr} (embedded; topics {})",
        embedded_broker::DEMO_TOPICS
    );
    println!("  log         {}", shown(&broker_dir));
    println!(
        "  offsets     {} (consumer {CONSUMER_NAME:?}, one follower per partition)",
        shown(&offsets_dir)
    );
    println!(
        "  publisher   {} events/s over {} users, key = user id",
        cli.rate, cli.users
    );
    match cli.duration_s {
        Some(seconds) => println!("  stops       after {seconds} s (or Ctrl-C)"),
        None => println!("  stops       on Ctrl-C"),
    }

    // A replay first: whatever earlier runs left in the log.
    let history = replay(
        &client,
        &ReplayConfig {
            topic: TOPIC.into(),
            partitions: None,
            consumer: ConsumerConfig::default(),
        },
    )
    .await?;
    println!(
        "  replay      {} records already in the log ({} users, {} violations)",
        history.records,
        history.per_user.len(),
        history.violations
    );
    let hw_start = high_watermarks(&client).await?;
    let partitions: Vec<i32> = hw_start.keys().copied().collect();
    let projection = ProjectionState::new();
    if let Some(bind) = cli.stats_bind.as_deref() {
        let addr = stats_http::serve_router(bind, routes(Arc::clone(&projection), cli.top)).await?;
        println!("  queries     http://{addr}/stats, http://{addr}/users/user-000");
    }
    println!();

    let mut demo = Demo::default();

    // Readers first, so they are following before the first event is published.
    let follow = FollowState::new();
    for &partition in &partitions {
        let (client, store, state) = (client.clone(), Arc::clone(&store), Arc::clone(&follow));
        let status_state = Arc::clone(&follow);
        let caught_up_state = Arc::clone(&follow);
        demo.reader(
            &format!("follow p{partition}"),
            Box::new(move || follow_status(&status_state, partition)),
            Box::new(move |hw| {
                caught_up_state
                    .partitions()
                    .get(&partition)
                    .is_some_and(|p| p.next_offset >= hw.get(&partition).copied().unwrap_or(0))
            }),
            move |stop| async move {
                let config = FollowConfig {
                    topic: TOPIC.into(),
                    partitions: Some(vec![partition]),
                    consumer_name: CONSUMER_NAME.into(),
                    consumer: ConsumerConfig::default(),
                };
                run_follow(client, store, config, state, stop).await?;
                Ok(())
            },
        );
    }

    {
        let (client, state) = (client.clone(), Arc::clone(&projection));
        let (status_state, caught_up_state, top) =
            (Arc::clone(&projection), Arc::clone(&projection), cli.top);
        demo.reader(
            "projection",
            Box::new(move || projection_status(&status_state, top)),
            Box::new(move |hw| {
                let positions = caught_up_state.model().positions();
                hw.iter()
                    .all(|(p, &end)| end == 0 || positions.get(p).is_some_and(|&at| at >= end))
            }),
            move |stop| async move {
                let config = ProjectionConfig {
                    topic: TOPIC.into(),
                    consumer: ConsumerConfig::default(),
                };
                run_projection(client, config, state, stop).await?;
                Ok(())
            },
        );
    }

    let published = PublisherStats::new();
    {
        let (client, stats) = (client.clone(), Arc::clone(&published));
        let status_stats = Arc::clone(&published);
        let started = Instant::now();
        let config = PublisherConfig {
            topic: TOPIC.into(),
            rate_per_s: cli.rate,
            users: cli.users,
            count: None,
            ack: AckPolicy::Written,
        };
        demo.writer(
            "publisher",
            Box::new(move || {
                let s = status_stats.snapshot();
                let rate = s.sent as f64 / started.elapsed().as_secs_f64().max(0.001);
                format!("sent {} ({rate:.0}/s), failed {}", s.sent, s.failed)
            }),
            move |stop| async move {
                run_publisher(client, config, stats, stop).await?;
                Ok(())
            },
        );
    }

    // One fencing sink shared by every worker: the receiver of the tasks' effects. It lives in
    // memory, so it holds only this run's effects: the check looks at dones from here on.
    let sink = ResultSink::new();
    let claims_start = client.topic("claims").await?.high_watermark(0).unwrap_or(0);
    if cli.task_rate > 0 {
        start_task_queue(&mut demo, &client, &addr, &cli, &sink).await?;
    }

    // Run until Ctrl-C, the duration, or a part failing.
    let started = Instant::now();
    let deadline = cli.duration_s.map(|s| started + Duration::from_secs(s));
    let mut screen = Screen {
        redraw: std::io::stdout().is_terminal(),
        lines_drawn: 0,
    };
    let mut refresh = tokio::time::interval(Duration::from_millis(REFRESH_MS));
    let mut failed_part = None;
    let reason = loop {
        tokio::select! {
            _ = refresh.tick() => {
                screen.draw(started.elapsed(), &demo.table());
                if let Some(name) = demo.ended_on_its_own() {
                    failed_part = Some(name.to_owned());
                    break "a part stopped on its own";
                }
            }
            () = interrupt.triggered() => break "Ctrl-C",
            () = sleep_until(deadline) => break "the duration passed",
        }
    };
    if screen.redraw {
        println!();
    }
    println!(
        "stopping ({reason}) after {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // Writers first; then give the readers time to read everything that was written.
    let mut ended = Demo::stop(&mut demo.writers).await;
    let hw_end = high_watermarks(&client).await?;
    let catch_up_deadline = Instant::now() + Duration::from_millis(CATCH_UP_LIMIT_MS);
    while !demo.readers.iter().all(|r| (r.caught_up)(&hw_end))
        && Instant::now() < catch_up_deadline
        && failed_part.is_none()
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let lagging: Vec<String> = demo
        .readers
        .iter()
        .filter(|r| !(r.caught_up)(&hw_end))
        .map(|r| r.name.clone())
        .collect();
    ended.extend(Demo::stop(&mut demo.readers).await);
    screen.redraw = false;
    screen.draw(started.elapsed(), &demo.table());

    // The checks: the log is the reference for everyone.
    let mut checks: Vec<Check> = Vec::new();
    for (name, outcome) in &ended {
        checks.push(Check {
            passed: outcome.is_ok(),
            detail: match outcome {
                Ok(()) => format!("{name} stopped cleanly"),
                Err(error) => format!("{name} failed: {error:#}"),
            },
        });
    }
    checks.push(Check {
        passed: lagging.is_empty(),
        detail: if lagging.is_empty() {
            "every reader caught up with the log".to_owned()
        } else {
            format!(
                "not caught up within {CATCH_UP_LIMIT_MS} ms: {}",
                lagging.join(", ")
            )
        },
    });
    checks.push(log_grew_by_published(
        &hw_start,
        &hw_end,
        &published.snapshot(),
    ));
    for progress in follow.partitions().values() {
        checks.push(follow_matches_replay(&client, TOPIC, progress).await?);
    }
    let model = projection.model().clone();
    checks.push(projection_matches_replay(&client, TOPIC, &model).await?);
    if cli.task_rate > 0 {
        checks.push(queue_verified(&client).await?);
        checks.push(sink_holds_every_completed_effect(&client, &sink, claims_start).await?);
    }

    println!("checks");
    for check in &checks {
        let mark = if check.passed { "ok    " } else { "FAILED" };
        println!("  {mark} {}", check.detail);
    }
    // The parts' status closures keep the workers (and their followers) alive: drop them before
    // the broker goes, so nothing retries against a closed port.
    drop(demo);
    drop(client);
    broker.shutdown().await?;
    let failures = checks.iter().filter(|c| !c.passed).count();
    if failures == 0 {
        println!("all {} checks passed", checks.len());
        Ok(ExitCode::SUCCESS)
    } else {
        println!("{failures} of {} checks FAILED", checks.len());
        Ok(ExitCode::FAILURE)
    }
}

/// Layer 2: a submitter (a writer) and `cli.workers` workers (readers: caught up once every task
/// submitted so far is finished), each worker with its own connection and followers.
async fn start_task_queue(
    demo: &mut Demo,
    client: &Client,
    addr: &str,
    cli: &Cli,
    sink: &ResultSink,
) -> anyhow::Result<()> {
    let submitted = Arc::new(AtomicU64::new(0));
    {
        let (client, count, status_count) = (
            client.clone(),
            Arc::clone(&submitted),
            Arc::clone(&submitted),
        );
        let interval = Duration::from_millis(1_000 / u64::from(cli.task_rate.max(1)));
        demo.writer(
            "submitter",
            Box::new(move || format!("submitted {} tasks", status_count.load(Ordering::Relaxed))),
            move |stop| async move {
                let mut tick = tokio::time::interval(interval);
                loop {
                    tokio::select! {
                        _ = tick.tick() => {}
                        () = stop.triggered() => return Ok(()),
                    }
                    let n = count.load(Ordering::Relaxed);
                    submit_task(&client, "tasks", format!("task {n}").into_bytes()).await?;
                    count.fetch_add(1, Ordering::Relaxed);
                }
            },
        );
    }
    for n in 1..=cli.workers {
        let config = WorkerConfig {
            lease_ms: cli.lease_ms,
            work_ms: cli.work_ms,
            ..WorkerConfig::default()
        };
        let work = work_into_sink(cli.work_ms, sink.clone());
        let worker = Arc::new(
            Worker::start_with_work(
                Client::connect(addr, ConnectionConfig::default()).await?,
                config,
                work,
            )
            .await?,
        );
        let (status_worker, caught_up_worker) = (Arc::clone(&worker), Arc::clone(&worker));
        demo.reader(
            &format!("worker {n}"),
            Box::new(move || worker_status(&status_worker)),
            // Caught up once every task this worker has read is finished.
            Box::new(move |_| {
                caught_up_worker
                    .view()
                    .with_state(|s| s.unfinished_count() == 0)
            }),
            move |stop| async move {
                worker.run(stop.triggered()).await?;
                Ok(())
            },
        );
    }
    Ok(())
}

/// The simulated work, with its effect (the result) committed to the shared `sink` under the
/// lease's token before the worker appends its done.
fn work_into_sink(work_ms: u64, sink: ResultSink) -> WorkFn {
    Arc::new(move |assignment: Assignment| {
        let sink = sink.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(work_ms)).await;
            let result = result_of(&assignment.payload);
            // A refusal means a newer holder has reached the sink: this work did not count. The
            // worker still appends its done, which the claims log fences in the same way.
            if let Err(refused) = sink.commit(assignment.task_id, assignment.token, result.clone())
            {
                tracing::warn!(%refused, "the sink refused an effect");
            }
            result
        }
        .boxed()
    })
}

/// Exactly-once effects: every task the claims log says was done in this run (a done at or after
/// `claims_start`) has its effect in the sink, committed under the token it completed with.
async fn sink_holds_every_completed_effect(
    client: &Client,
    sink: &ResultSink,
    claims_start: i64,
) -> anyhow::Result<Check> {
    let (tasks, claims) = read_logs(client, "tasks", "claims").await?;
    let mut state = QueueState::new(QueueConfig::default());
    for (offset, task) in &tasks {
        state.apply_task(*offset, task)?;
    }
    for (offset, record) in &claims {
        state.apply_claims_record(*offset, record)?;
    }
    let mut completed = 0;
    let mut missing = 0;
    for task in state.tasks() {
        let TaskStatus::Done {
            lease, done_offset, ..
        } = &task.status
        else {
            continue;
        };
        if *done_offset < claims_start {
            continue;
        }
        completed += 1;
        let expected = task.submission.as_ref().map(|s| result_of(&s.payload));
        let held = sink.effect(task.task_id);
        if held.map(|c| (c.token, Some(c.effect))) != Some((lease.token, expected)) {
            missing += 1;
        }
    }
    Ok(Check {
        passed: missing == 0,
        detail: format!(
            "result sink: {completed} tasks completed in this run, {missing} without their effect under the completing token; {} effects held, {} refused",
            sink.len(),
            sink.refused()
        ),
    })
}

fn worker_status(worker: &Worker) -> String {
    let s = worker.stats();
    let holding = worker.current_task().map_or_else(
        || "idle".to_owned(),
        |(task, token)| format!("holding {} (token {token})", &task.to_string()[..8]),
    );
    format!(
        "claims {:<5} won {:<5} lost races {:<4} completed {:<5} {holding}",
        s.claims, s.wins, s.lost_races, s.completed
    )
}

/// `queue-verify` in-process: both logs replayed, every invariant checked.
async fn queue_verified(client: &Client) -> anyhow::Result<Check> {
    let (tasks, claims) = read_logs(client, "tasks", "claims").await?;
    let report = verify(&tasks, &claims, &VerifyConfig::drained_at(wall_clock_ms()));
    let s = &report.summary;
    Ok(Check {
        passed: report.is_clean(),
        detail: format!(
            "task queue verified: {} tasks, {} completed, {} claims, {} lost races, {} expired leases, {} fenced dones, {} violations",
            s.tasks,
            s.completed,
            s.claims,
            s.lost_races,
            s.expired_leases,
            s.fenced_dones,
            report.violations.len()
        ),
    })
}

fn follow_status(state: &FollowState, partition: i32) -> String {
    let partitions = state.partitions();
    let Some(p) = partitions.get(&partition) else {
        return "starting".to_owned();
    };
    let start = p.resumed_from.map_or_else(
        || "earliest (nothing saved)".to_owned(),
        |offset| format!("saved position {offset}"),
    );
    let mut line = format!(
        "at {:<7} lag {:<5} records {:<7} started from {start}",
        p.next_offset,
        (p.high_watermark - p.next_offset).max(0),
        p.tally.records,
    );
    if p.tally.duplicates > 0 {
        let _ = write!(line, ", {} duplicates", p.tally.duplicates);
    }
    if p.tally.violations() > 0 {
        let _ = write!(line, ", {} VIOLATIONS", p.tally.violations());
    }
    line
}

fn projection_status(state: &ProjectionState, top: usize) -> String {
    let stats = stats_json(state, top);
    let top_users: Vec<String> = stats["top_users"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|u| format!("{} {}", u["user_id"].as_str().unwrap_or("?"), u["events"]))
        .collect();
    let phase = stats["phase"].as_str().unwrap_or("?");
    let mut line = format!(
        "{phase:<11} events {:<7} users {:<4} top: {}",
        stats["events"],
        stats["users"],
        top_users.join(", ")
    );
    if stats["violations"].as_u64().unwrap_or(0) > 0 {
        let _ = write!(line, ", {} VIOLATIONS", stats["violations"]);
    }
    line
}

/// Per partition of the events topic: the high watermark now.
async fn high_watermarks(client: &Client) -> anyhow::Result<BTreeMap<i32, i64>> {
    let topic = client.topic(TOPIC).await?;
    Ok(topic
        .partitions()
        .iter()
        .map(|p| (p.id, p.high_watermark))
        .collect())
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// The path as given, and absolute when that differs.
fn shown(path: &Path) -> String {
    match std::fs::canonicalize(path) {
        Ok(absolute) if absolute != path => format!("{} ({})", path.display(), absolute.display()),
        _ => path.display().to_string(),
    }
}
