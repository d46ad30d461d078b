//! `demo`: both layers in one process — an embedded broker (or NATS JetStream); a replay of what
//! earlier runs left,
//! the publisher, a follow consumer per partition and the projection (layer 1); a task submitter
//! and three queue workers racing for tasks through the claims log, committing their effects
//! through one shared fencing sink (layer 2) — with a live table, and cross-checks at the end
//! (including `queue-verify`'s invariants over the tasks and claims logs, and the sink's effects).
//!
//! ```text
//! cargo run --release -p booblik-samples --bin demo -- [--data-dir ./demo-data] [--bind 127.0.0.1:0]
//!     [--duration-s N] [--rate 100] [--users 50] [--stats-bind addr] [--top 3]
//!     [--task-rate 2] [--workers 3] [--lease-ms MS] [--work-ms 400] [--no-freeze]
//!     [--engine booblik|jetstream] [--nats-url nats://h:p,…] [--spawn-nats]
//!     [--jetstream-partitions 3] [--jetstream-replicas 3]
//! ```
//!
//! **On JetStream** (`--engine jetstream`) the events layer runs on one R3 stream per partition
//! of a NATS cluster: `--nats-url` names one (its nodes, comma-separated), or `--spawn-nats`
//! starts a local 3-node cluster from the installed `nats-server` (its stores in
//! `<data-dir>/nats`) and stops it at exit. The publisher, followers, projection and checks are
//! the same code as on booblik. So is the task queue: its `tasks` and `claims` topics become one
//! R3 stream each (created here when missing), the submitter appends through the demo's engine,
//! and each worker opens an engine of its own on its own thread ([`Backend::worker_connect`]).
//! Two settings differ, both derived from measured failovers (docs/jetstream.md): the lease
//! defaults to 15 s instead of 2 s ([`JETSTREAM_LEASE_MS`]: a lease held when a stream's leader
//! dies outlives the write outage), and the workers may take [`JETSTREAM_QUEUE_STALL_MS`] longer
//! to catch up after the stop (the queue stalls up to 22 s after a claims leader is killed). The
//! freeze lasts 1.5 × the lease on both, so with it a JetStream run lasts at least about 25 s
//! (`--spawn-nats --duration-s 3`: 26.6 s here), until the frozen worker woke and caught up.
//!
//! **Fencing, shown.** Unless `--no-freeze`, one worker freezes once per run: the first to finish
//! a task's work has its OS thread blocked for 1.5 × its lease before it commits (each worker
//! runs on a thread of its own, so nothing of it runs meanwhile, not even its local-deadline
//! timer). Its lease lapses, another worker takes the task over and fences the shared sink when
//! its work starts; when the frozen worker wakes, the sink refuses its late effect ("1 refused")
//! and the claims log fences its done.
//!
//! The broker's log goes to `<data-dir>/broker` and the follow consumers' positions to
//! `<data-dir>/offsets` (on JetStream: `<data-dir>/jetstream-offsets`, as its offsets are stream
//! sequences); both survive the demo, so running it again shows the consumers resuming
//! (`started from saved position …`) and the projection rebuilding from the whole log. `rm -rf demo-data` starts
//! afresh. Ctrl-C (or `--duration-s`) stops it: the publisher first, then — once every reader has
//! caught up with the log — the readers, each finishing and checkpointing its batch in hand. Then a
//! replay checks what everyone saw; the exit status is 0 only when every check passed.
//!
//! Every part is a library function from `booblik_samples::events` or `booblik_samples::queue`,
//! the same code the stand-alone binaries run. This file is the order of things; `parts.rs` starts
//! and stops the parts, `checks.rs` holds the task queue's checks, `screen.rs` the table. To add a
//! part, spawn it with [`Demo::writer`] (it produces) or [`Demo::reader`] (it consumes and has a
//! notion of "caught up"), giving it a one-line status for the table.

mod checks;
mod parts;
mod screen;

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::Context;
use booblik_broker::Broker;
use booblik_client::{Client, ConnectionConfig};
use booblik_offset_store::{FileOffsetStore, OffsetStore};
use booblik_samples::engine::jetstream::StreamSettings;
use booblik_samples::engine::{
    Ack, BooblikEngine, Bounds, EngineError, EngineKind, IntoEngine, LogEngine, ReadLimits,
};
use booblik_samples::events::crosscheck::{
    Check, follow_matches_replay, log_grew_by_published, projection_matches_replay,
};
use booblik_samples::events::follow::{FollowConfig, FollowState, run_follow};
use booblik_samples::events::projection::http::routes;
use booblik_samples::events::projection::{ProjectionConfig, ProjectionState, run_projection};
use booblik_samples::events::publisher::{PublisherConfig, PublisherStats, run_publisher};
use booblik_samples::events::replay::{ReplayConfig, replay};
use booblik_samples::queue::worker::{
    ConnectFn, Freeze, ResultSink, Worker, WorkerConfig, open_tasks_log, simulated_work,
    spawn_on_own_thread_with, submit_task_to,
};
use booblik_samples::support::cli::{DEFAULT_PARTITIONS, EngineArgs, ensure_topic, open_jetstream};
use booblik_samples::support::nats_cluster::NatsCluster;
use booblik_samples::support::retry::RETRY_BACKOFF_MS;
use booblik_samples::support::shutdown::Shutdown;
use booblik_samples::support::{embedded_broker, logging, stats_http};
use clap::Parser;
use tokio::time::Instant;

use parts::Demo;
use screen::{Screen, follow_status, projection_status, shown, worker_status};

/// The events topic.
const TOPIC: &str = "events";
/// The task queue's topics, one partition each.
const TASKS_TOPIC: &str = "tasks";
const CLAIMS_TOPIC: &str = "claims";
/// The queue workers' lease on booblik (`--lease-ms` unset): one node, no failover to outlast,
/// so a short lease keeps the freeze (1.5 × the lease) and the takeover it shows quick.
const BOOBLIK_LEASE_MS: u64 = 2_000;
/// The queue workers' lease on JetStream (`--lease-ms` unset): long enough that a lease held
/// when a stream's leader dies outlives the write outage that follows. A worker extends every
/// lease / 3 and stops at its local deadline, lease − a tenth (the default skew allowance), so
/// in the worst case (the outage begins just before an extend was due) it keeps its task for
/// 0.9 − 1/3 ≈ 0.57 of the lease past the kill. The longest write outage measured on this
/// machine kind is 8.4 s (docs/jetstream.md, "Failover, measured"): 8.4 s / 0.57 = 14.8 s,
/// hence 15 s. (With the booblik default of 2 s every lease held at a failover lapses and its
/// task is run again, an expired lease counted towards its dead letter.)
const JETSTREAM_LEASE_MS: u64 = 15_000;
/// How much longer than [`CATCH_UP_LIMIT_MS`] the queue workers may take to catch up on
/// JetStream: the queue stalls for up to this long after a claims (or tasks) stream's leader is
/// killed — measured 11.1, 11.2 and 21.7 s from the kill to six more completions
/// (docs/jetstream.md, "The task queue on JetStream"), longer than the write outage because the
/// followers' cursors on the dead node are given up only after their pull's expiry, and claims
/// back off. On booblik (one node) there is no failover to wait out.
const JETSTREAM_QUEUE_STALL_MS: u64 = 22_000;
/// The follow consumers' name in the offset store.
const CONSUMER_NAME: &str = "demo-follow";
/// How often the table is redrawn.
const REFRESH_MS: u64 = 1_000;
/// After the writers stop, how long the readers get to catch up with the log.
const CATCH_UP_LIMIT_MS: u64 = 15_000;
/// How long the demo's own look at the partitions' bounds (at the start, and when the writers
/// stop) waits out an engine that is unavailable: on JetStream a stream that lost its leader
/// answers nothing until it elected another, measured 4.1–8.4 s (docs/jetstream.md, "Failover,
/// measured"); a look at its end meanwhile must not fail the run.
const BOUNDS_PATIENCE_MS: u64 = 30_000;

#[derive(Debug, Parser)]
#[command(
    name = "demo",
    version,
    about = "The events samples and the task queue in one process, on an embedded broker (or NATS JetStream)"
)]
struct Cli {
    #[command(flatten)]
    engine: EngineArgs,
    /// With `--engine jetstream`: start a local 3-node NATS cluster (the installed
    /// `nats-server`, stores in `<data-dir>/nats`) instead of using `--nats-url`, and stop it at
    /// exit.
    #[arg(long)]
    spawn_nats: bool,
    /// Directory for the broker's log (`broker/`) and the consumers' positions (`offsets/`).
    #[arg(long, default_value = "./demo-data")]
    data_dir: PathBuf,
    /// Address of the embedded broker (port 0: any free port), e.g. 127.0.0.1:9092 to poke at it
    /// with the `booblik` CLI. Not used on JetStream.
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
    /// Lease of a claimed task, in milliseconds (default: 2000 on booblik, 15000 on JetStream,
    /// to outlive a failover's write outage).
    #[arg(long)]
    lease_ms: Option<u64>,
    /// Simulated work per task, in milliseconds.
    #[arg(long, default_value_t = 400)]
    work_ms: u64,
    /// Do not freeze a worker (by default one worker's thread is blocked once, for 1.5 × the
    /// lease, to show the fencing sink refusing its late effect).
    #[arg(long)]
    no_freeze: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    // Warnings only: the table is the demo's output. RUST_LOG=info shows every component's log.
    logging::init_with_default("warn");
    let cli = Cli::parse();
    let interrupt = Shutdown::new().trigger_on_signals();

    std::fs::create_dir_all(&cli.data_dir)
        .with_context(|| format!("cannot create {}", cli.data_dir.display()))?;
    let backend = Backend::start(&cli).await?;
    let engine = backend.engine();
    let offsets_dir = cli.data_dir.join(match cli.engine.engine {
        EngineKind::Booblik => "offsets",
        EngineKind::Jetstream => "jetstream-offsets",
    });
    let store: Arc<dyn OffsetStore> = Arc::new(FileOffsetStore::open(&offsets_dir).await?);

    println!("booblik demo");
    backend.describe(&cli);
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
        engine.as_ref(),
        &ReplayConfig {
            topic: TOPIC.into(),
            partitions: None,
            limits: ReadLimits::default(),
        },
    )
    .await?;
    println!(
        "  replay      {} records already in the log ({} users, {} violations)",
        history.records,
        history.per_user.len(),
        history.violations
    );
    let bounds_start = bounds_of(engine.as_ref(), TOPIC).await?;
    let hw_start = ends(&bounds_start);
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
        let (engine, store, state) = (Arc::clone(&engine), Arc::clone(&store), Arc::clone(&follow));
        let status_state = Arc::clone(&follow);
        let caught_up_state = Arc::clone(&follow);
        demo.reader(
            &format!("follow p{partition}"),
            Box::new(move || follow_status(&status_state, partition)),
            Box::new(move |hw| {
                caught_up_state
                    .partitions()
                    .get(&partition)
                    .is_some_and(|p| hw.get(&partition).is_none_or(|b| p.next_offset >= b.end))
            }),
            CATCH_UP_LIMIT_MS,
            move |stop| async move {
                let config = FollowConfig {
                    topic: TOPIC.into(),
                    partitions: Some(vec![partition]),
                    consumer_name: CONSUMER_NAME.into(),
                    limits: ReadLimits::default(),
                };
                run_follow(engine, store, config, state, stop).await?;
                Ok(())
            },
        );
    }

    {
        let (engine, state) = (Arc::clone(&engine), Arc::clone(&projection));
        let (status_state, caught_up_state, top) =
            (Arc::clone(&projection), Arc::clone(&projection), cli.top);
        demo.reader(
            "projection",
            Box::new(move || projection_status(&status_state, top)),
            Box::new(move |hw| {
                let positions = caught_up_state.model().positions();
                // An empty partition gives the fold nothing to reach.
                hw.iter().all(|(p, b)| {
                    b.end == b.start || positions.get(p).is_some_and(|&at| at >= b.end)
                })
            }),
            CATCH_UP_LIMIT_MS,
            move |stop| async move {
                let config = ProjectionConfig {
                    topic: TOPIC.into(),
                    limits: ReadLimits::default(),
                    snapshot: None,
                };
                run_projection(engine, config, state, stop).await?;
                Ok(())
            },
        );
    }

    let published = PublisherStats::new();
    {
        let (engine, stats) = (Arc::clone(&engine), Arc::clone(&published));
        let status_stats = Arc::clone(&published);
        let started = Instant::now();
        let config = PublisherConfig {
            topic: TOPIC.into(),
            rate_per_s: cli.rate,
            users: cli.users,
            count: None,
            ack: Ack::Written,
        };
        demo.writer(
            "publisher",
            Box::new(move || {
                let s = status_stats.snapshot();
                let rate = s.sent as f64 / started.elapsed().as_secs_f64().max(0.001);
                format!("sent {} ({rate:.0}/s), failed {}", s.sent, s.failed)
            }),
            move |stop| async move {
                run_publisher(engine, config, stats, stop).await?;
                Ok(())
            },
        );
    }

    // One fencing sink shared by every worker: the receiver of the tasks' effects. It lives in
    // memory, so it holds only this run's effects: the check looks at dones from here on.
    let sink = ResultSink::new();
    // The task queue, on the same engine: the done records from here on are this run's.
    let queue = if cli.task_rate > 0 {
        let claims_start = bounds_of(engine.as_ref(), CLAIMS_TOPIC)
            .await?
            .get(&0)
            .context("the claims topic has no partition 0")?
            .end;
        let lease_ms = cli.lease_ms.unwrap_or(backend.default_lease_ms());
        // The freeze needs a second worker to take the task over.
        let freeze = if !cli.no_freeze && cli.workers >= 2 {
            Some(Freeze::once(lease_ms * 3 / 2)?)
        } else {
            None
        };
        // A worker catches up once every task it read is finished: after the events readers'
        // limit, allow for the engine's failover stall and for a worker frozen near the end.
        let catch_up_limit_ms = CATCH_UP_LIMIT_MS
            + backend.queue_failover_stall_ms()
            + freeze
                .as_ref()
                .map_or(0, |f| f.duration().as_millis() as u64);
        println!(
            "  task queue  {} tasks/s, {} workers, lease {lease_ms} ms, caught up within {catch_up_limit_ms} ms of the stop",
            cli.task_rate, cli.workers
        );
        let queue = TaskQueue {
            lease_ms,
            catch_up_limit_ms,
        };
        queue
            .start(&mut demo, &engine, &backend, &cli, &sink, freeze.as_ref())
            .await?;
        Some((claims_start, freeze))
    } else {
        None
    };
    // Run until Ctrl-C, the duration, or a part failing.
    let started = Instant::now();
    let deadline = cli.duration_s.map(|s| started + Duration::from_secs(s));
    let mut screen = Screen::new(std::io::stdout().is_terminal());
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
    let bounds_end = bounds_of(engine.as_ref(), TOPIC).await?;
    // Each reader until it caught up or its own limit passed.
    let writers_stopped = Instant::now();
    let waited_out =
        |r: &parts::Component| writers_stopped.elapsed().as_millis() as u64 >= r.catch_up_limit_ms;
    while !demo
        .readers
        .iter()
        .all(|r| (r.caught_up)(&bounds_end) || waited_out(r))
        && failed_part.is_none()
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let waited_ms = writers_stopped.elapsed().as_millis() as u64;
    let lagging: Vec<(String, u64)> = demo
        .readers
        .iter()
        .filter(|r| !(r.caught_up)(&bounds_end))
        .map(|r| (r.name.clone(), r.catch_up_limit_ms))
        .collect();
    ended.extend(Demo::stop(&mut demo.readers).await);
    screen.redraw = false;
    screen.draw(started.elapsed(), &demo.table());

    // The checks: the log is the reference for everyone.
    let mut checks: Vec<Check> = checks::parts_stopped_cleanly(&ended);
    checks.push(checks::readers_caught_up(&lagging, waited_ms));
    checks.push(log_grew_by_published(
        &hw_start,
        &ends(&bounds_end),
        &published.snapshot(),
    ));
    for progress in follow.partitions().values() {
        checks.push(follow_matches_replay(engine.as_ref(), TOPIC, progress).await?);
    }
    let model = projection.model().clone();
    checks.push(projection_matches_replay(engine.as_ref(), TOPIC, &model).await?);
    if let Some((claims_start, freeze)) = &queue {
        checks.push(checks::queue_verified(&engine).await?);
        checks
            .push(checks::sink_holds_every_completed_effect(&engine, &sink, *claims_start).await?);
        if let Some(freeze) = freeze {
            checks.push(checks::frozen_worker_was_fenced(freeze, &sink));
        }
    }

    println!("checks");
    for check in &checks {
        let mark = if check.passed { "ok    " } else { "FAILED" };
        println!("  {mark} {}", check.detail);
    }
    // The parts' status closures keep the workers (and their followers) alive: drop them before
    // the broker goes, so nothing retries against a closed port.
    drop(demo);
    drop(queue);
    drop(engine);
    backend.stop().await?;
    let failures = checks.iter().filter(|c| !c.passed).count();
    if failures == 0 {
        println!("all {} checks passed", checks.len());
        Ok(ExitCode::SUCCESS)
    } else {
        println!("{failures} of {} checks FAILED", checks.len());
        Ok(ExitCode::FAILURE)
    }
}

/// Layer 2's settings: the workers' lease and how long they may take to catch up.
struct TaskQueue {
    lease_ms: u64,
    catch_up_limit_ms: u64,
}

impl TaskQueue {
    /// Starts a submitter (a writer) and `cli.workers` workers (readers: caught up once every
    /// task submitted so far is finished), all on `engine`'s kind of engine: the submitter on
    /// `engine` itself, each worker on an engine of its own that `backend` opens on the worker's
    /// thread. Nothing here knows which engine it is.
    async fn start(
        &self,
        demo: &mut Demo,
        engine: &Arc<dyn LogEngine>,
        backend: &Backend,
        cli: &Cli,
        sink: &ResultSink,
        freeze: Option<&Arc<Freeze>>,
    ) -> anyhow::Result<()> {
        let tasks = open_tasks_log(engine.as_ref(), TASKS_TOPIC).await?;
        let submitted = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(AtomicU64::new(0));
        {
            let (count, status_count) = (Arc::clone(&submitted), Arc::clone(&submitted));
            let (failures, status_failures) = (Arc::clone(&failed), Arc::clone(&failed));
            let interval = Duration::from_millis(1_000 / u64::from(cli.task_rate.max(1)));
            demo.writer(
                "submitter",
                Box::new(move || {
                    format!(
                        "submitted {} tasks, failed {}",
                        status_count.load(Ordering::Relaxed),
                        status_failures.load(Ordering::Relaxed)
                    )
                }),
                move |stop| async move {
                    let mut tick = tokio::time::interval(interval);
                    loop {
                        tokio::select! {
                            _ = tick.tick() => {}
                            () = stop.triggered() => return Ok(()),
                        }
                        let n = count.load(Ordering::Relaxed);
                        let payload = format!("task {n}").into_bytes();
                        match submit_task_to(tasks.as_ref(), payload, Ack::Forced).await {
                            Ok(_) => {
                                count.fetch_add(1, Ordering::Relaxed);
                            }
                            // An engine that is unavailable for a while (a stream electing a
                            // leader) costs the tasks of that while, as the publisher's events.
                            Err(error) if is_transient(&error) => {
                                failures.fetch_add(1, Ordering::Relaxed);
                                tracing::warn!(
                                    error = format!("{error:#}"),
                                    "a task was not submitted"
                                );
                            }
                            Err(error) => return Err(error),
                        }
                    }
                },
            );
        }
        for n in 1..=cli.workers {
            let name = format!("worker {n}");
            let config = WorkerConfig {
                lease_ms: self.lease_ms,
                work_ms: cli.work_ms,
                ..WorkerConfig::default()
            };
            config.validate()?;
            // Every worker fences the shared sink when its work starts and commits its result
            // there; the freeze, if any, blocks the first worker to finish its work before it
            // commits.
            let mut work = simulated_work(cli.work_ms);
            if let Some(freeze) = freeze {
                work = freeze.wrap(name.clone(), work);
            }
            let work = sink.fencing(work);
            // Set once the worker has started on its thread; the table says "starting" until
            // then.
            let started: Arc<OnceLock<Arc<Worker>>> = Arc::default();
            let (status_started, caught_up_started, run_started) =
                (Arc::clone(&started), Arc::clone(&started), started);
            let (status_freeze, status_name) = (freeze.map(Arc::clone), name.clone());
            let connect = backend.worker_connect();
            demo.reader(
                &name,
                Box::new(move || {
                    status_started.get().map_or_else(
                        || "starting".to_owned(),
                        |worker| worker_status(worker, status_freeze.as_deref(), &status_name),
                    )
                }),
                // Caught up once every task this worker has read is finished.
                Box::new(move |_| {
                    caught_up_started.get().is_some_and(|worker| {
                        worker.view().with_state(|s| s.unfinished_count() == 0)
                    })
                }),
                self.catch_up_limit_ms,
                move |stop| async move {
                    // Each worker on an OS thread of its own, with its own engine opened there,
                    // so that a freeze stops all of it and only it.
                    let worker = spawn_on_own_thread_with(connect, config, work, async move {
                        stop.triggered().await;
                    })
                    .await?;
                    let _ = run_started.set(Arc::clone(worker.worker()));
                    worker.join().await?;
                    Ok(())
                },
            );
        }
        Ok(())
    }
}

/// Whether a failed call may succeed when tried again later (the engine said so).
fn is_transient(error: &anyhow::Error) -> bool {
    error
        .downcast_ref::<EngineError>()
        .is_some_and(EngineError::is_transient)
}

/// Where the events live: an embedded broker, or a JetStream cluster (spawned here or not).
enum Backend {
    Booblik {
        broker: Broker,
        client: Client,
    },
    Jetstream {
        engine: Arc<dyn LogEngine>,
        urls: Vec<String>,
        /// `--spawn-nats`: the cluster started here, killed when the demo ends.
        cluster: Option<NatsCluster>,
        settings: StreamSettings,
    },
}

impl Backend {
    async fn start(cli: &Cli) -> anyhow::Result<Self> {
        match cli.engine.engine {
            EngineKind::Booblik => {
                let broker_dir = cli.data_dir.join("broker");
                std::fs::create_dir_all(&broker_dir)
                    .with_context(|| format!("cannot create {}", broker_dir.display()))?;
                let broker =
                    embedded_broker::start(&broker_dir, cli.bind, embedded_broker::DEMO_TOPICS)
                        .await?;
                let client =
                    Client::connect(broker.local_addr().to_string(), ConnectionConfig::default())
                        .await?;
                Ok(Backend::Booblik { broker, client })
            }
            EngineKind::Jetstream => {
                let (cluster, urls) = if cli.spawn_nats {
                    let cluster = NatsCluster::start(&cli.data_dir.join("nats"), 3)?;
                    let urls = cluster.urls();
                    (Some(cluster), urls)
                } else {
                    (None, cli.engine.nats_url.clone())
                };
                let settings = StreamSettings {
                    replicas: cli.engine.jetstream_replicas,
                    ..StreamSettings::default()
                };
                let engine = open_jetstream(&urls, &settings).await?;
                ensure_topic(&engine, TOPIC, DEFAULT_PARTITIONS, &settings).await?;
                if cli.task_rate > 0 {
                    for topic in [TASKS_TOPIC, CLAIMS_TOPIC] {
                        ensure_topic(&engine, topic, 1, &settings).await?;
                    }
                }
                Ok(Backend::Jetstream {
                    engine: Arc::new(engine),
                    urls,
                    cluster,
                    settings,
                })
            }
        }
    }

    fn engine(&self) -> Arc<dyn LogEngine> {
        match self {
            Backend::Booblik { client, .. } => Arc::new(BooblikEngine::new(client.clone())),
            Backend::Jetstream { engine, .. } => Arc::clone(engine),
        }
    }

    /// Opens, on the calling worker's thread, an engine of the same kind as
    /// [`engine`](Self::engine), on a connection of its own.
    fn worker_connect(&self) -> ConnectFn {
        match self {
            Backend::Booblik { broker, .. } => {
                let addr = broker.local_addr().to_string();
                Box::new(move || {
                    Box::pin(async move {
                        let client = Client::connect(addr, ConnectionConfig::default()).await?;
                        Ok(client.into_engine())
                    })
                })
            }
            Backend::Jetstream { urls, settings, .. } => {
                let (urls, settings) = (urls.clone(), settings.clone());
                Box::new(move || {
                    Box::pin(async move {
                        let engine = open_jetstream(&urls, &settings).await?;
                        Ok(engine.into_engine())
                    })
                })
            }
        }
    }

    /// The workers' lease when `--lease-ms` is not given.
    fn default_lease_ms(&self) -> u64 {
        match self {
            Backend::Booblik { .. } => BOOBLIK_LEASE_MS,
            Backend::Jetstream { .. } => JETSTREAM_LEASE_MS,
        }
    }

    /// How long the task queue may stall when the engine fails over.
    fn queue_failover_stall_ms(&self) -> u64 {
        match self {
            Backend::Booblik { .. } => 0,
            Backend::Jetstream { .. } => JETSTREAM_QUEUE_STALL_MS,
        }
    }

    fn describe(&self, cli: &Cli) {
        match self {
            Backend::Booblik { broker, .. } => {
                println!(
                    "  broker      {} (embedded; topics {})",
                    broker.local_addr(),
                    embedded_broker::DEMO_TOPICS
                );
                println!("  log         {}", shown(&cli.data_dir.join("broker")));
            }
            Backend::Jetstream {
                urls,
                cluster,
                settings,
                ..
            } => {
                let whose = if cluster.is_some() {
                    format!(
                        "spawned here, stores in {}",
                        shown(&cli.data_dir.join("nats"))
                    )
                } else {
                    "--nats-url".to_owned()
                };
                println!("  jetstream   {} ({whose})", urls.join(","));
                println!(
                    "  streams     one per partition of {TOPIC:?} (and of {TASKS_TOPIC:?}, {CLAIMS_TOPIC:?}), R{} when created here",
                    settings.replicas
                );
            }
        }
    }

    async fn stop(self) -> anyhow::Result<()> {
        match self {
            Backend::Booblik { broker, client } => {
                drop(client);
                broker.shutdown().await?;
            }
            // Dropping the cluster kills its nodes; their stores stay for the next run.
            Backend::Jetstream { cluster, .. } => drop(cluster),
        }
        Ok(())
    }
}

/// Per partition of `topic`: its bounds now, retrying an engine that is unavailable for up to
/// [`BOUNDS_PATIENCE_MS`].
async fn bounds_of(engine: &dyn LogEngine, topic: &str) -> anyhow::Result<BTreeMap<i32, Bounds>> {
    let deadline = Instant::now() + Duration::from_millis(BOUNDS_PATIENCE_MS);
    loop {
        match try_bounds_of(engine, topic).await {
            Err(error) if error.is_transient() && Instant::now() < deadline => {
                tracing::warn!(%error, "cannot read the partitions' bounds yet; retrying");
                tokio::time::sleep(Duration::from_millis(RETRY_BACKOFF_MS)).await;
            }
            outcome => return Ok(outcome?),
        }
    }
}

async fn try_bounds_of(
    engine: &dyn LogEngine,
    topic: &str,
) -> Result<BTreeMap<i32, Bounds>, EngineError> {
    let mut bounds = BTreeMap::new();
    for partition in 0..engine.partition_count(topic).await? {
        let log = engine.open(topic, partition).await?;
        bounds.insert(partition, log.bounds().await?);
    }
    Ok(bounds)
}

/// Per partition: its end (the high watermark).
fn ends(bounds: &BTreeMap<i32, Bounds>) -> BTreeMap<i32, i64> {
    bounds.iter().map(|(&p, b)| (p, b.end)).collect()
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
