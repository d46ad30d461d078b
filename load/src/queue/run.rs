//! One queue run, start to verdict: broker (or JetStream streams), observer, tasks, workers,
//! chaos, shutdown, and the verifier over both logs.
//!
//! The claims protocol runs on either engine (`--engine`): a fresh booblik broker per run, or
//! two fresh R3 streams per run on the invocation's 3-node NATS cluster. Nothing below
//! [`conduct`] knows which.
//!
//! The conductor is one loop that owns every piece of run state (no locks): it folds worker
//! events into the [`Tally`], records submissions, and every [`CHECK_EVERY`] asks the
//! [`Observer`] whether every task is finished, lets the chaos monkey pick victims, and watches
//! the time limit.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use booblik_client::{Client, ConnectionConfig};
use booblik_samples::engine::jetstream::{StreamSettings, naming};
use booblik_samples::engine::{IntoEngine, JetStreamEngine, LogEngine};
use booblik_samples::queue::record::{ClaimsRecord, ProtocolLevel};
use booblik_samples::queue::state::{Event, QueueConfig};
use booblik_samples::queue::verify::{TraceStep, VerifyConfig, Violation, replay, verify};
use booblik_samples::queue::worker::{
    Assignment, WorkFn, Worker, WorkerConfig, WorkerEvent, WorkerPool, WorkerStats, open_tasks_log,
    read_logs, result_of, wall_clock_ms,
};
use booblik_samples::support::cli::ensure_topic;
use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::{Instant, MissedTickBehavior};
use uuid::Uuid;

use super::chaos::{ChaosPlan, Stalls};
use super::effects::Effects;
use super::observer::{FinishedTally, Observer};
use super::tally::Tally;
use super::thread::{Joined, StartGate, WorkerThread, start_line};
use super::{Arrival, ChaosMode, PoolConnection, QueueRatios, QueueRun, QueueRunConfig, arrival};
use crate::baseline::Baseline;
use crate::broker_host::{BrokerProcess, BrokerSpec};
use crate::cpu;
use crate::harness::Harness;
use crate::latency::LatencyRecorder;

/// A run's figures and its claim-latency histogram (for the plots).
#[derive(Debug, Clone)]
pub struct QueueOutcome {
    /// The figures.
    pub run: QueueRun,
    /// Every claim latency of the run.
    pub claim_latency: LatencyRecorder,
}

/// Topic of task records.
pub const TASKS_TOPIC: &str = "tasks";
/// Topic of claims, extends and dones.
pub const CLAIMS_TOPIC: &str = "claims";
/// How often the conductor checks for the end of the run and for chaos.
const CHECK_EVERY: Duration = Duration::from_millis(10);
/// "Deep backlog": at least this many never-claimed tasks per worker remain.
const DEEP_BACKLOG_TASKS_PER_WORKER: usize = 2;
/// How long workers get to stop after the shutdown signal before they are abandoned.
pub const SHUTDOWN_LIMIT: Duration = Duration::from_secs(10);

/// A started worker: its thread, whether the monkey killed it, and its stall switch.
struct Slot {
    thread: WorkerThread<WorkerStats>,
    killed: bool,
    stall: Arc<AtomicBool>,
}

/// Opens an engine for one worker, on the worker's own thread (its connections belong there).
type ConnectEngine =
    Arc<dyn Fn() -> BoxFuture<'static, anyhow::Result<Arc<dyn LogEngine>>> + Send + Sync>;

/// Where a run's two logs are, on whichever engine.
struct Backend {
    /// The harness's own engine (observer, enqueueing, reading the logs back).
    admin: Arc<dyn LogEngine>,
    /// How each worker opens its own.
    connect: ConnectEngine,
    tasks_topic: String,
    claims_topic: String,
    /// Whether the logs hold this run's records only.
    fresh: bool,
    /// Where the booblik broker ran (null: an external one, or JetStream).
    broker_process: Option<BrokerProcess>,
    /// How it wrote its segments (null: an external one, or JetStream).
    broker_write_mode: Option<&'static str>,
}

/// Runs one configuration against a fresh broker (or `--broker`).
pub async fn run(harness: &Harness, config: QueueRunConfig) -> anyhow::Result<QueueOutcome> {
    anyhow::ensure!(config.workers > 0 && config.tasks > 0, "an empty run");
    let spec = BrokerSpec {
        // Like the peers, a server process of its own; the hop probe needs it in this one.
        process: if booblik_protocol::probe::ENABLED {
            BrokerProcess::Embedded
        } else {
            BrokerProcess::Child
        },
        ..BrokerSpec::with_topics(format!("{TASKS_TOPIC}:1,{CLAIMS_TOPIC}:1"))
    };
    harness
        .with_broker(&spec, async |host| {
            let addr = host.addr().to_owned();
            let admin = Client::connect(host.addr(), ConnectionConfig::default()).await?;
            let backend = Backend {
                admin: admin.into_engine(),
                connect: Arc::new(move || {
                    let addr = addr.clone();
                    Box::pin(async move {
                        let client = Client::connect(&addr, ConnectionConfig::default()).await?;
                        Ok(client.into_engine())
                    })
                }),
                tasks_topic: TASKS_TOPIC.to_owned(),
                claims_topic: CLAIMS_TOPIC.to_owned(),
                fresh: host.is_fresh(),
                broker_process: host.process(),
                broker_write_mode: host.process().map(|_| harness.write_mode.name()),
            };
            conduct(&backend, config, &harness.baseline).await
        })
        .await
}

/// Replicas of the claims protocol's streams on JetStream: R3, like the work-queue peer's.
pub const JETSTREAM_REPLICAS: usize = 3;

/// Runs one configuration of the claims protocol on the JetStream cluster at `url`
/// (comma-separated): two fresh R3 streams (tasks, claims) for the run, deleted after it.
pub async fn run_on_jetstream(
    harness: &Harness,
    url: &str,
    config: QueueRunConfig,
) -> anyhow::Result<QueueOutcome> {
    anyhow::ensure!(config.workers > 0 && config.tasks > 0, "an empty run");
    let urls: Vec<String> = url.split(',').map(str::to_owned).collect();
    let engine = JetStreamEngine::connect(&urls).await?;
    let run_id = Uuid::new_v4().simple().to_string();
    let (tasks_topic, claims_topic) = (
        format!("load-{run_id}-{TASKS_TOPIC}"),
        format!("load-{run_id}-{CLAIMS_TOPIC}"),
    );
    let settings = StreamSettings {
        replicas: JETSTREAM_REPLICAS,
        max_age: None,
    };
    for topic in [&tasks_topic, &claims_topic] {
        ensure_topic(&engine, topic, 1, &settings).await?;
    }
    let backend = Backend {
        admin: engine.clone().into_engine(),
        connect: Arc::new(move || {
            let urls = urls.clone();
            Box::pin(async move { Ok(JetStreamEngine::connect(&urls).await?.into_engine()) })
        }),
        tasks_topic: tasks_topic.clone(),
        claims_topic: claims_topic.clone(),
        fresh: true,
        broker_process: None,
        broker_write_mode: None,
    };
    let outcome = conduct(&backend, config, &harness.baseline).await;
    for topic in [&tasks_topic, &claims_topic] {
        let stream = naming::stream_name(topic, 0)?;
        if let Err(error) = engine.context().delete_stream(&stream).await {
            tracing::warn!(stream, %error, "cannot delete a run's stream");
        }
    }
    outcome
}

/// The hop probe's table for one run, on stderr, one tab-separated line per hop:
/// `HOP label hop samples p10 p50 p90 p99` (µs). Only with the `hop-probe` feature
/// (`docs/experiments/claim-hops.md`).
fn print_hops(label: &str) {
    for (hop, mut samples) in booblik_protocol::probe::take() {
        samples.sort_unstable();
        let at = |q: f64| {
            let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
            samples[i] as f64 / 1_000.0
        };
        eprintln!(
            "HOP\t{label}\t{hop}\t{}\t{:.1}\t{:.1}\t{:.1}\t{:.1}",
            samples.len(),
            at(0.10),
            at(0.50),
            at(0.90),
            at(0.99)
        );
    }
}

async fn conduct(
    backend: &Backend,
    config: QueueRunConfig,
    baseline: &Baseline,
) -> anyhow::Result<QueueOutcome> {
    let queue = QueueConfig::default();
    let effects = Effects::fencing();
    let stalls = Stalls::new(config.lease_ms);
    let admin = backend.admin.as_ref();
    let observer = Observer::start(admin, &backend.claims_topic, queue).await?;
    let tasks_log = open_tasks_log(admin, &backend.tasks_topic).await?;
    let worker_config = || WorkerConfig {
        worker_id: Uuid::new_v4(),
        tasks_topic: backend.tasks_topic.clone(),
        claims_topic: backend.claims_topic.clone(),
        lease_ms: config.lease_ms,
        work_ms: config.work_ms,
        extend_every_ms: 0,
        pick: config.pick.pick(),
        queue,
        claim_ack: config.claim_ack.policy(),
        // Every worker of a run starts on an empty queue with this code, so all of them read
        // level 2: rendezvous gets its heartbeats, and a stopping worker releases its task.
        protocol: ProtocolLevel::V2,
        done_with_next_claim: config.done_with_next_claim,
        ..WorkerConfig::default()
    };

    let (submitted_tx, mut submitted_rx) = mpsc::unbounded_channel();
    let mut submitted: HashMap<Uuid, Instant> = HashMap::with_capacity(config.tasks);
    let task_ack = engine_ack(config.claim_ack)?;
    let enqueue = |rate| {
        arrival::enqueue(
            Arc::clone(&tasks_log),
            config.tasks,
            task_ack,
            rate,
            submitted_tx.clone(),
        )
    };
    let mut enqueuer = None;
    if config.arrival == Arrival::Backlog {
        enqueue(None).await?;
        while let Ok((id, at)) = submitted_rx.try_recv() {
            submitted.insert(id, at);
        }
    }

    let (events_tx, mut events_rx) = mpsc::unbounded_channel();
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let (start, gate) = start_line();
    // Pools of `config.pool` workers, each on a thread of its own, so a frozen member stalls
    // neither the followers nor its siblings.
    let pool_count = if config.pool > 1 {
        config.workers.div_ceil(config.pool)
    } else {
        0
    };
    let pools = futures::future::try_join_all(
        (0..pool_count)
            .map(|index| start_pool(Arc::clone(&backend.connect), worker_config(), index)),
    )
    .await?;
    let mut slots = Vec::with_capacity(config.workers);
    let new_slot = |slot: usize| {
        let stall = Arc::new(AtomicBool::new(false));
        let work = booblik_work(config.work_ms, Arc::clone(&stall), &stalls, &effects);
        // Replacements (slots past the first `workers`) join the pools in turn.
        let pool = (!pools.is_empty()).then(|| {
            let index = if slot < config.workers {
                slot / config.pool
            } else {
                slot % pools.len()
            };
            let engine = (config.pool_connection == PoolConnection::Shared)
                .then(|| Arc::clone(&pools[index].engine));
            (pools[index].pool.clone(), engine)
        });
        start_worker(
            Arc::clone(&backend.connect),
            worker_config(),
            pool,
            slot,
            events_tx.clone(),
            shutdown_rx.clone(),
            gate.clone(),
            work,
            stall,
        )
    };
    // Started together: each start is a few round trips (connect, METADATA, two followers), and
    // 30 of them one after another were a noticeable share of a short run's wall time.
    slots.extend(futures::future::try_join_all((0..config.workers).map(new_slot)).await?);
    let cpu_before = cpu::process_cpu_seconds();
    let started = Instant::now();
    start.open();
    // The hop probe times the workers' claims only: not the enqueueing, not the start.
    drop(booblik_protocol::probe::take());
    if config.arrival == Arrival::Trickle {
        enqueuer = Some(tokio::spawn(enqueue(Some(config.trickle_per_s))));
    }
    let deadline = started + Duration::from_millis(config.max_run_ms);
    let mut tally = Tally::new(config.warmup_claims_per_worker);
    let mut finished_tally = FinishedTally::default();
    let mut stalled_slots = Vec::new();
    let mut chaos = config.chaos.map(|c| ChaosPlan::new(c, config.workers));
    let mut replaced = 0u64;
    let mut check = tokio::time::interval(CHECK_EVERY);
    check.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // `Some` when the run hit its time limit; `None` when every task finished, and then the run
    // ended when the last one did (below, once every event is in).
    let timed_out_at = loop {
        tokio::select! {
            Some((slot, event, at)) = events_rx.recv() => tally.apply(slot, &event, at),
            Some((id, at)) = submitted_rx.recv() => { submitted.insert(id, at); }
            _ = check.tick() => {
                let now = Instant::now();
                let finished = observer.finished_among(&submitted, &mut finished_tally);
                // A stalled worker must get to commit its late effect and its done before the
                // run ends, or the stall would measure nothing.
                let working = tally.working_slots();
                let stalled_busy = !stalls.all_ended()
                    || stalled_slots.iter().any(|s| working.contains(s));
                if submitted.len() == config.tasks && finished == config.tasks && !stalled_busy {
                    break None;
                }
                if now >= deadline {
                    tracing::warn!(finished, tasks = config.tasks, "queue run hit its time limit");
                    break Some(now);
                }
                if let Some(reason) = observer.failure() {
                    bail!("{reason}");
                }
                if let Some(slot) = slots.iter().position(|s| !s.killed && s.thread.is_finished()) {
                    let outcome = slots.swap_remove(slot).thread.join(SHUTDOWN_LIMIT).await;
                    bail!("worker {slot} stopped during the run: {outcome:?}");
                }
                if let Some(plan) = &mut chaos {
                    for victim in plan.victims(finished, config.tasks, &working) {
                        match plan.mode() {
                            ChaosMode::Crash => {
                                slots[victim].thread.kill();
                                slots[victim].killed = true;
                                tally.forget(victim);
                                tracing::info!(slot = victim, "chaos: worker killed mid-task");
                            }
                            ChaosMode::Stall => {
                                slots[victim].stall.store(true, Ordering::SeqCst);
                                stalled_slots.push(victim);
                                tracing::info!(slot = victim, "chaos: worker to freeze mid-task");
                            }
                        }
                        if plan.replaces() {
                            let slot = slots.len();
                            slots.push(new_slot(slot).await?);
                            replaced += 1;
                        }
                    }
                }
            }
        }
    };
    // Events still on their way: the last dones' acknowledgements among them.
    while let Ok((slot, event, at)) = events_rx.try_recv() {
        tally.apply(slot, &event, at);
    }
    let ended_at = timed_out_at.unwrap_or_else(|| {
        finished_tally
            .last_finished_at(|offset| tally.done_acknowledged_at(offset))
            .unwrap_or(started)
    });
    let elapsed_s = ended_at.duration_since(started).as_secs_f64();
    if booblik_protocol::probe::ENABLED {
        print_hops(&super::label(&config));
    }
    let process_cpu_s = cpu::process_cpu_seconds() - cpu_before;

    shutdown_tx.send_replace(true);
    // A worker drops events its observer does not take in time (its event queue is bounded);
    // a dropped `VerdictKnown` would leave a claim out of the latency histogram, so a run that
    // lost any event is not reported.
    let mut events_dropped = 0;
    for (index, slot) in slots.into_iter().enumerate() {
        if slot.killed {
            continue;
        }
        match slot.thread.join(SHUTDOWN_LIMIT).await {
            Joined::Returned(Ok(stats)) => events_dropped += stats.events_dropped,
            Joined::Returned(Err(error)) => {
                tracing::warn!(worker = index, %error, "worker ended badly");
            }
            Joined::TimedOut => tracing::warn!(worker = index, "worker did not stop in time"),
        }
    }
    // The pools' followers outlive every member: stopped only once the members are joined.
    for pool in pools {
        pool.stop().await;
    }
    if let Some(enqueuer) = enqueuer {
        enqueuer.abort();
    }
    anyhow::ensure!(
        events_dropped == 0,
        "workers dropped {events_dropped} events the harness did not take in time: the \
         claim-latency histogram would be incomplete"
    );
    observer.stop();
    drop(events_tx);
    while let Ok((slot, event, at)) = events_rx.try_recv() {
        tally.apply(slot, &event, at);
    }
    while let Ok((id, at)) = submitted_rx.try_recv() {
        submitted.insert(id, at);
    }

    let (mut tasks, mut claims) =
        read_logs(&backend.admin, &backend.tasks_topic, &backend.claims_topic)
            .await
            .context("reading the logs back")?;
    if !backend.fresh {
        // An external broker's logs hold earlier runs too: keep this run's tasks and claims.
        tasks.retain(|(_, task)| submitted.contains_key(&task.task_id));
        claims.retain(|(_, record)| {
            record
                .task_id()
                .is_some_and(|task_id| submitted.contains_key(&task_id))
        });
    }
    let report = verify(
        &tasks,
        &claims,
        &VerifyConfig {
            queue,
            as_of_ms: wall_clock_ms(),
            lost_after_ms: 0,
        },
    );
    let summary = &report.summary;
    let violations = report
        .violations
        .iter()
        .filter(|v| !matches!(v, Violation::TaskLost { .. }))
        .inspect(|v| tracing::error!(violation = ?v, "queue invariant broken"))
        .count() as u64;

    let deep = match config.arrival {
        Arrival::Backlog => {
            let (_, trace, _) = replay(&tasks, &claims, queue);
            Some(lost_races_in_deep_backlog(
                &trace,
                summary.tasks as usize,
                DEEP_BACKLOG_TASKS_PER_WORKER * config.workers,
            ))
        }
        Arrival::Trickle => None,
    };
    let claim_latency_us = tally.claim_latency.percentiles();
    let enqueue_to_claim_us = tally.enqueue_to_claim(&submitted).percentiles();
    let claim_p50_ms = claim_latency_us.p50 / 1_000.0;
    let mut ceiling_tasks_per_s = super::ceiling_tasks_per_s(
        config.workers,
        config.work_ms,
        claim_p50_ms,
        config.done_with_next_claim,
    );
    let arrival_per_s = match config.arrival {
        Arrival::Backlog => 0.0,
        Arrival::Trickle => {
            ceiling_tasks_per_s = ceiling_tasks_per_s.min(config.trickle_per_s);
            config.trickle_per_s
        }
    };
    let tasks_total = summary.tasks;
    let effect_counts = effects.counts();
    let run = QueueRun {
        system: config.system.name(),
        broker_process: backend.broker_process,
        broker_write_mode: backend.broker_write_mode,
        repetition: config.repetition,
        workers: config.workers,
        pool: config.pool as u64,
        pool_connection: config.pool_connection,
        pick: Some(config.pick),
        arrival: config.arrival,
        claim_ack: Some(config.claim_ack),
        chaos: config.chaos.map(|c| c.mode),
        work_ms: config.work_ms,
        lease_ms: config.lease_ms,
        arrival_per_s,
        claim_latency_us,
        claim_latency_samples: tally.claim_latency.count(),
        warmup_claims_discarded: tally.warmup_discarded,
        done_with_next_claim: config.done_with_next_claim,
        enqueue_to_claim_us,
        attempts: summary.claims,
        wins: summary.wins,
        lost_races: summary.lost_races,
        lost_race_pct: 100.0 * summary.lost_races as f64 / (summary.claims.max(1)) as f64,
        empty_claims: None,
        deep_backlog_claims: deep.map(|d| d.claims),
        lost_race_pct_deep_backlog: deep.map(|d| 100.0 * d.lost as f64 / d.claims.max(1) as f64),
        attempts_per_task: summary.claims as f64 / tasks_total.max(1) as f64,
        attempts_histogram: attempts_histogram(&tasks_ids(&tasks), &claims),
        duplicate_executions: summary.duplicate_executions,
        expired_leases: summary.expired_leases,
        fenced_dones: summary.fenced_dones,
        duplicate_dones: summary.duplicate_effects,
        effects_committed: effect_counts.committed,
        duplicate_effects: effect_counts.duplicates,
        superseded_effects: effect_counts.superseded,
        refused_effects: effect_counts.refused,
        tasks_total,
        tasks_completed: summary.completed,
        tasks_never_completed: summary.never_completed,
        dead_lettered: summary.dead_lettered,
        violations,
        workers_killed: chaos
            .as_ref()
            .filter(|c| c.mode() == ChaosMode::Crash)
            .map_or(0, |c| c.killed() as u64),
        workers_stalled: stalls.started(),
        workers_replaced: replaced,
        tasks_per_s: summary.completed as f64 / elapsed_s.max(f64::MIN_POSITIVE),
        ceiling_tasks_per_s,
        elapsed_s,
        process_cpu_s,
        vs_baseline: QueueRatios::of(&claim_latency_us, baseline),
    };
    Ok(QueueOutcome {
        run,
        claim_latency: tally.claim_latency,
    })
}

/// The work of a booblik worker: fence the sink with the lease's token, work `work_ms`, freeze
/// if the chaos monkey asked for it, commit the effect under the token, return the result.
fn booblik_work(
    work_ms: u64,
    stall: Arc<AtomicBool>,
    stalls: &Stalls,
    effects: &Effects,
) -> WorkFn {
    let stalls = stalls.clone();
    let effects = effects.clone();
    Arc::new(move |assignment: Assignment| {
        let (stall, stalls, effects) = (Arc::clone(&stall), stalls.clone(), effects.clone());
        async move {
            effects.fence(assignment.task_id, assignment.token);
            booblik_samples::queue::worker::work_for(work_ms).await;
            let result = result_of(&assignment.payload);
            stalls.freeze_if_asked(&stall);
            effects.commit(assignment.task_id, assignment.token, result.clone());
            result
        }
        .boxed()
    })
}

/// A [`WorkerPool`] whose followers run on a thread of their own until [`PoolThread::stop`].
struct PoolThread {
    pool: WorkerPool,
    /// The pool's engine (its connections run on the pool's thread): members append through it
    /// with `--pool-connection shared`.
    engine: Arc<dyn LogEngine>,
    stop: oneshot::Sender<()>,
    thread: WorkerThread<()>,
    index: usize,
}

impl PoolThread {
    async fn stop(self) {
        drop(self.pool);
        let _ = self.stop.send(());
        match self.thread.join(SHUTDOWN_LIMIT).await {
            Joined::Returned(Ok(())) => {}
            Joined::Returned(Err(error)) => {
                tracing::warn!(pool = self.index, %error, "pool ended badly");
            }
            Joined::TimedOut => tracing::warn!(pool = self.index, "pool did not stop in time"),
        }
    }
}

/// Starts a pool's followers on a thread of their own (its own engine, like a worker's), for
/// members of `template`'s topics and rules. Returns once the followers run.
async fn start_pool(
    connect: ConnectEngine,
    template: WorkerConfig,
    index: usize,
) -> anyhow::Result<PoolThread> {
    let (started_tx, started_rx) = oneshot::channel();
    let (stop, stopped) = oneshot::channel::<()>();
    let thread = WorkerThread::spawn(format!("booblik-pool{index}"), move |kill| async move {
        let engine = connect().await?;
        let pool = WorkerPool::start(Arc::clone(&engine), &template).await?;
        let _ = started_tx.send((pool.clone(), engine));
        tokio::select! {
            _ = stopped => {}
            _ = kill => {}
        }
        drop(pool);
        Ok(())
    })?;
    match started_rx.await {
        Ok((pool, engine)) => Ok(PoolThread {
            pool,
            engine,
            stop,
            thread,
            index,
        }),
        Err(_) => Err(match thread.join(SHUTDOWN_LIMIT).await {
            Joined::Returned(Err(error)) => error.context(format!("pool {index} did not start")),
            other => anyhow!("pool {index} did not start: {other:?}"),
        }),
    }
}

/// Starts a worker on its own thread (see [`super::thread`]): opens its engine, starts the
/// worker (a member of `pool` when given: it reads its verdicts from the pool's followers)
/// with its events forwarded as `(slot, event)`, and runs it until `shutdown` turns true or the
/// thread is killed. Returns once the worker has started.
#[allow(clippy::too_many_arguments)] // one call site; the arguments are the worker's parts
async fn start_worker(
    connect: ConnectEngine,
    config: WorkerConfig,
    pool: Option<(WorkerPool, Option<Arc<dyn LogEngine>>)>,
    slot: usize,
    events_out: mpsc::UnboundedSender<(usize, WorkerEvent, Instant)>,
    mut shutdown: watch::Receiver<bool>,
    gate: StartGate,
    work: WorkFn,
    stall: Arc<AtomicBool>,
) -> anyhow::Result<Slot> {
    let (started_tx, started_rx) = oneshot::channel();
    let thread = WorkerThread::spawn(format!("booblik-w{slot}"), move |kill| async move {
        let mut worker = match pool {
            // The pool's connection: its tasks run on the pool's thread, not this one.
            Some((pool, Some(engine))) => pool.start_worker_with_work(engine, config, work).await?,
            Some((pool, None)) => {
                pool.start_worker_with_work(connect().await?, config, work)
                    .await?
            }
            None => Worker::start_with_work(connect().await?, config, work).await?,
        };
        let mut events = worker.events().context("a new worker's events")?;
        // Stamped here, on the worker's thread: the conductor may take them in late. A claim's
        // append is not forwarded (the tally has no use for it; each event wakes the
        // conductor, on the cores the run measures).
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                if matches!(event, WorkerEvent::ClaimAppended { .. }) {
                    continue;
                }
                if events_out.send((slot, event, Instant::now())).is_err() {
                    break;
                }
            }
        });
        let _ = started_tx.send(());
        gate.passed().await;
        // A kill returns at once and drops the worker, its followers and (with the runtime)
        // its connections — a crash, as far as the other workers can tell.
        tokio::select! {
            outcome = worker.run(async move {
                let _ = shutdown.wait_for(|stop| *stop).await;
            }) => outcome,
            _ = kill => Err(anyhow!("killed")),
        }
    })?;
    if started_rx.await.is_err() {
        return Err(match thread.join(SHUTDOWN_LIMIT).await {
            Joined::Returned(Err(error)) => error.context(format!("worker {slot} did not start")),
            other => anyhow!("worker {slot} did not start: {other:?}"),
        });
    }
    Ok(Slot {
        thread,
        killed: false,
        stall,
    })
}

/// Claims appended while the backlog was deep, and how many of them lost.
#[derive(Debug, Clone, Copy)]
struct DeepBacklog {
    claims: u64,
    lost: u64,
}

/// Walks the verdicts in log order, counting never-claimed tasks; claims appended while at
/// least `deep_at` of the `tasks` had never been claimed count as "deep backlog" claims. This
/// separates collisions while workers have plenty to choose from (what the pick strategy
/// controls) from the drain at the end, when fewer tasks than workers remain and collisions
/// are unavoidable.
fn lost_races_in_deep_backlog(trace: &[TraceStep], tasks: usize, deep_at: usize) -> DeepBacklog {
    let mut won = std::collections::HashSet::new();
    let mut deep = DeepBacklog { claims: 0, lost: 0 };
    for step in trace {
        if !matches!(step.record, ClaimsRecord::Claim(_)) {
            continue;
        }
        let is_deep = tasks.saturating_sub(won.len()) >= deep_at;
        let is_win = matches!(step.event, Event::ClaimWon { .. });
        if is_deep {
            deep.claims += 1;
            deep.lost += u64::from(!is_win);
        }
        if let Event::ClaimWon { task_id, .. } = step.event {
            won.insert(task_id);
        }
    }
    deep
}

fn tasks_ids(tasks: &[(i64, booblik_samples::queue::record::Task)]) -> Vec<Uuid> {
    tasks.iter().map(|(_, t)| t.task_id).collect()
}

/// `(attempts, tasks)`: how many tasks saw exactly that many claims (0 included).
fn attempts_histogram(task_ids: &[Uuid], claims: &[(i64, ClaimsRecord)]) -> Vec<(u64, u64)> {
    let mut per_task: HashMap<Uuid, u64> = task_ids.iter().map(|id| (*id, 0)).collect();
    for (_, record) in claims {
        if let ClaimsRecord::Claim(claim) = record {
            *per_task.entry(claim.task_id).or_insert(0) += 1;
        }
    }
    let mut histogram: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
    for attempts in per_task.values() {
        *histogram.entry(*attempts).or_insert(0) += 1;
    }
    histogram.into_iter().collect()
}

/// The engine's ack level of a run's claim ack (NONE returns no offset: refused).
fn engine_ack(ack: crate::ack::Ack) -> anyhow::Result<booblik_samples::engine::Ack> {
    match ack {
        crate::ack::Ack::Forced => Ok(booblik_samples::engine::Ack::Forced),
        crate::ack::Ack::Written => Ok(booblik_samples::engine::Ack::Written),
        crate::ack::Ack::None => bail!("claims and tasks need an acknowledged append, not NONE"),
    }
}
