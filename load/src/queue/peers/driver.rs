//! One peer run, start to counts — the peers' counterpart of [`super::super::run`]: reset the
//! server's state, enqueue the tasks (backlog or trickle, the same schedule), start the workers
//! (one OS thread and one connection each), let chaos crash or freeze them, end when every task
//! is finished, and read the final counts from the server.
//!
//! **Claim latency** is the time from issuing the claim to knowing it is won, as for booblik: a
//! Redis claim is `XREADGROUP` (preceded, every `RECLAIM_EVERY_MS`, by the `XAUTOCLAIM` that looks
//! for lapsed leases, which is part of that claim), a PostgreSQL claim is one `UPDATE`. A claim
//! that waited for a task to arrive (Redis's blocking `XREADGROUP` of an idle worker) measures the
//! wait, not the claim; it is left out of the histogram and shows in enqueue → won. A claim that
//! found nothing is counted in `empty_claims`, not as a lost race: the server let no two claims
//! race.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{anyhow, bail};
use booblik_samples::queue::state::QueueConfig;
use booblik_samples::queue::worker::result_of;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::{Instant, MissedTickBehavior};
use uuid::Uuid;

use super::{Endpoint, Peer, jetstream, postgres, redis};
use crate::baseline::Baseline;
use crate::cpu;
use crate::latency::LatencyRecorder;
use crate::queue::arrival::{BACKLOG_SUBMISSIONS_IN_FLIGHT, scheduled_arrival};
use crate::queue::chaos::{ChaosPlan, Stalls};
use crate::queue::effects::Effects;
use crate::queue::observer::{Finish, FinishedTally};
use crate::queue::run::{QueueOutcome, SHUTDOWN_LIMIT};
use crate::queue::thread::{Joined, StartGate, WorkerThread, start_line};
use crate::queue::{Arrival, ChaosMode, QueueRatios, QueueRun, QueueRunConfig};

/// Longest wait of an idle worker before it claims again (Redis: the `BLOCK` of its read;
/// PostgreSQL: its wait for a notification). Bounds how long a lapsed lease waits for an idle
/// worker to look.
pub const IDLE_WAIT_MS: u64 = 100;
/// How often the conductor checks for the end of the run and for chaos.
const CHECK_EVERY: Duration = Duration::from_millis(10);

/// A task a claim won.
#[derive(Debug, Clone)]
pub struct Claimed {
    /// The task.
    pub task_id: Uuid,
    /// Redis: the delivery count; PostgreSQL: the `attempts` column (checked by done and
    /// extend). Neither reaches the effect sink as a fence.
    pub token: i64,
    /// The task's input.
    pub payload: Vec<u8>,
    /// Redis: the entry id; PostgreSQL: the row id.
    pub handle: String,
    /// Won after a lease lapsed.
    pub reclaimed: bool,
}

/// What a claim found.
#[derive(Debug)]
pub enum ClaimOutcome {
    /// A task, leased to this worker.
    Won(Claimed),
    /// A task whose leases lapsed too often, dead-lettered by this claim.
    DeadLettered(Uuid),
    /// Nothing claimable.
    Empty,
}

/// The names of one run's keys, streams and tables, for every peer.
#[derive(Debug, Clone)]
struct RunKeys {
    redis: redis::Keys,
    jetstream: jetstream::Names,
}

impl RunKeys {
    fn fresh() -> Self {
        Self {
            redis: redis::Keys::fresh(),
            jetstream: jetstream::Names::fresh(),
        }
    }
}

enum Consumer {
    Redis(redis::Consumer),
    Postgres(postgres::Consumer),
    // Boxed: a JetStream consumer carries its connection state inline.
    JetStream(Box<jetstream::Consumer>),
}

impl Consumer {
    async fn claim(&mut self, block: bool) -> anyhow::Result<ClaimOutcome> {
        match self {
            Consumer::Redis(c) => c.claim(block).await,
            Consumer::Postgres(c) => c.claim().await,
            Consumer::JetStream(c) => c.claim(block).await,
        }
    }

    /// After an empty claim: Redis waits in its next (blocking) claim, PostgreSQL here.
    async fn idle(&mut self) -> bool {
        match self {
            Consumer::Redis(_) | Consumer::JetStream(_) => true,
            Consumer::Postgres(c) => {
                c.wait_for_work().await;
                false
            }
        }
    }

    async fn extend(&mut self, claimed: &Claimed) -> anyhow::Result<bool> {
        match self {
            Consumer::Redis(c) => c.extend(claimed).await,
            Consumer::Postgres(c) => c.extend(claimed).await,
            Consumer::JetStream(c) => c.extend(claimed).await,
        }
    }

    /// The done of `finished` and the next claim in one round trip: whether the done was
    /// accepted, and what the claim found (never waiting for a task to arrive).
    async fn done_and_claim(&mut self, finished: &Claimed) -> anyhow::Result<(bool, ClaimOutcome)> {
        match self {
            Consumer::Redis(c) => c.done_and_claim(finished).await,
            Consumer::Postgres(c) => c.done_and_claim(finished).await,
            Consumer::JetStream(c) => c.done_and_claim(finished).await,
        }
    }

    async fn done(&mut self, claimed: &Claimed) -> anyhow::Result<bool> {
        match self {
            Consumer::Redis(c) => c.done(claimed).await,
            Consumer::Postgres(c) => c.done(claimed).await,
            Consumer::JetStream(c) => c.done(claimed).await,
        }
    }
}

enum Submitter {
    Redis(redis::Submitter),
    Postgres(postgres::Submitter),
    JetStream(jetstream::Submitter),
}

impl Submitter {
    async fn connect(url: &str, peer: Peer, keys: &RunKeys) -> anyhow::Result<Self> {
        Ok(match peer {
            Peer::Redis | Peer::RedisFsync => {
                Submitter::Redis(redis::Submitter::connect(url, &keys.redis).await?)
            }
            Peer::JetstreamWorkqueue => {
                Submitter::JetStream(jetstream::Submitter::connect(url, &keys.jetstream).await?)
            }
            Peer::Postgres | Peer::PostgresAsync => Submitter::Postgres(
                postgres::Submitter::connect(url, peer == Peer::Postgres).await?,
            ),
        })
    }

    async fn submit(&mut self, task_id: Uuid, payload: &[u8]) -> anyhow::Result<()> {
        match self {
            Submitter::Redis(s) => s.submit(task_id, payload).await,
            Submitter::Postgres(s) => s.submit(task_id, payload).await,
            Submitter::JetStream(s) => s.submit(task_id, payload).await,
        }
    }

    async fn submit_batch(&mut self, tasks: &[(Uuid, Vec<u8>)]) -> anyhow::Result<()> {
        match self {
            Submitter::Redis(s) => s.submit_batch(tasks).await,
            Submitter::Postgres(s) => s.submit_batch(tasks).await,
            Submitter::JetStream(s) => s.submit_batch(tasks).await,
        }
    }

    async fn final_counts(&mut self, tasks: u64) -> anyhow::Result<(u64, u64)> {
        match self {
            Submitter::Redis(s) => s.final_counts(tasks).await,
            Submitter::Postgres(s) => s.final_counts(tasks).await,
            Submitter::JetStream(s) => s.final_counts(tasks).await,
        }
    }
}

/// What a peer worker reports.
#[derive(Debug, Clone, Copy)]
enum PeerEvent {
    Won {
        task_id: Uuid,
        at: Instant,
        /// `None` for a claim that waited for its task to arrive.
        latency: Option<Duration>,
        reclaimed: bool,
    },
    DeadLettered {
        task_id: Uuid,
        at: Instant,
    },
    Empty,
    LeaseLost,
    Done {
        task_id: Uuid,
        at: Instant,
        accepted: bool,
    },
}

/// The same payload as booblik's tasks.
fn payload(index: usize) -> Vec<u8> {
    format!("load task {index}").into_bytes()
}

async fn enqueue(
    mut submitter: Submitter,
    count: usize,
    rate_per_s: Option<f64>,
    submitted: mpsc::UnboundedSender<(Uuid, Instant)>,
) -> anyhow::Result<Submitter> {
    let start = Instant::now();
    if rate_per_s.is_none() {
        // A backlog: every task is there before the first claim, so send them in batches (one
        // pipeline, transaction or ack wait each) of as many as booblik's backlog has in flight. One task per round trip made
        // the peers' backlog runs 2-4 times as long as booblik's.
        let mut index = 0;
        while index < count {
            let batch: Vec<(Uuid, Vec<u8>)> = (index
                ..count.min(index + BACKLOG_SUBMISSIONS_IN_FLIGHT))
                .map(|i| (Uuid::new_v4(), payload(i)))
                .collect();
            submitter.submit_batch(&batch).await?;
            let at = Instant::now();
            for (task_id, _) in &batch {
                if submitted.send((*task_id, at)).is_err() {
                    return Ok(submitter);
                }
            }
            index += batch.len();
        }
        return Ok(submitter);
    }
    for index in 0..count {
        let at = match rate_per_s {
            Some(rate) => {
                let at = scheduled_arrival(start, index, rate);
                tokio::time::sleep_until(at).await;
                at
            }
            None => Instant::now(),
        };
        let task_id = Uuid::new_v4();
        submitter.submit(task_id, &payload(index)).await?;
        if submitted.send((task_id, at)).is_err() {
            break;
        }
    }
    Ok(submitter)
}

#[derive(Debug, Clone, Copy)]
struct WorkerSettings {
    peer: Peer,
    work_ms: u64,
    lease_ms: u64,
    max_expired_leases: u64,
    /// Send a finished task's done with the next claim, in one round trip.
    done_with_next_claim: bool,
}

struct Slot {
    thread: WorkerThread<()>,
    killed: bool,
    stall: Arc<AtomicBool>,
}

#[allow(clippy::too_many_arguments)] // one worker's whole wiring, called from one place
async fn start_worker(
    url: &str,
    keys: &RunKeys,
    settings: WorkerSettings,
    slot: usize,
    effects: &Effects,
    stalls: &Stalls,
    events: mpsc::UnboundedSender<(usize, PeerEvent)>,
    mut shutdown: watch::Receiver<bool>,
    gate: StartGate,
) -> anyhow::Result<Slot> {
    let (url, keys, effects, stalls) = (
        url.to_owned(),
        keys.clone(),
        effects.clone(),
        stalls.clone(),
    );
    let stall = Arc::new(AtomicBool::new(false));
    let switch = Arc::clone(&stall);
    let (started_tx, started_rx) = oneshot::channel();
    let name = format!("{}-w{slot}", settings.peer.name());
    let thread = WorkerThread::spawn(name.clone(), move |kill| async move {
        let worker = Uuid::new_v4();
        let consumer = match settings.peer {
            Peer::Redis | Peer::RedisFsync => Consumer::Redis(
                redis::Consumer::connect(
                    &url,
                    &keys.redis,
                    format!("{name}-{}", worker.simple()),
                    settings.lease_ms,
                    settings.max_expired_leases,
                )
                .await?,
            ),
            Peer::Postgres | Peer::PostgresAsync => Consumer::Postgres(
                postgres::Consumer::connect(
                    &url,
                    settings.peer == Peer::Postgres,
                    worker,
                    settings.lease_ms,
                    settings.max_expired_leases,
                )
                .await?,
            ),
            Peer::JetstreamWorkqueue => Consumer::JetStream(Box::new(
                jetstream::Consumer::connect(&url, &keys.jetstream, settings.max_expired_leases)
                    .await?,
            )),
        };
        let _ = started_tx.send(());
        gate.passed().await;
        tokio::select! {
            outcome = serve(consumer, slot, settings, &switch, &stalls, &effects, &events) => outcome,
            _ = shutdown.wait_for(|stop| *stop) => Ok(()),
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

/// A peer worker's loop: claim, work (extending every lease/3), freeze if asked, commit the
/// effect, done. Returns only with an error.
async fn serve(
    mut consumer: Consumer,
    slot: usize,
    settings: WorkerSettings,
    stall: &AtomicBool,
    stalls: &Stalls,
    effects: &Effects,
    events: &mpsc::UnboundedSender<(usize, PeerEvent)>,
) -> anyhow::Result<()> {
    let send = |event| {
        let _ = events.send((slot, event));
    };
    let extend_every = Duration::from_millis(settings.lease_ms / 3);
    let mut block = false;
    // A finished task whose done goes with the next claim (`done_with_next_claim`).
    let mut finished: Option<Claimed> = None;
    loop {
        let issued = Instant::now();
        let outcome = match finished.take() {
            Some(finished) => {
                let (accepted, outcome) = consumer.done_and_claim(&finished).await?;
                send(PeerEvent::Done {
                    task_id: finished.task_id,
                    at: Instant::now(),
                    accepted,
                });
                outcome
            }
            None => consumer.claim(block).await?,
        };
        let at = Instant::now();
        let waited = block;
        block = false;
        let claimed = match outcome {
            ClaimOutcome::Empty => {
                send(PeerEvent::Empty);
                block = consumer.idle().await;
                continue;
            }
            ClaimOutcome::DeadLettered(task_id) => {
                send(PeerEvent::DeadLettered { task_id, at });
                continue;
            }
            ClaimOutcome::Won(claimed) => claimed,
        };
        send(PeerEvent::Won {
            task_id: claimed.task_id,
            at,
            latency: (!waited).then(|| at - issued),
            reclaimed: claimed.reclaimed,
        });
        effects.fence(claimed.task_id, claimed.token);
        let work = booblik_samples::queue::worker::work_for(settings.work_ms);
        tokio::pin!(work);
        let mut next_extend = Instant::now() + extend_every;
        let mut lost = false;
        loop {
            tokio::select! {
                () = &mut work => break,
                () = tokio::time::sleep_until(next_extend) => {
                    if !consumer.extend(&claimed).await? {
                        lost = true;
                        break;
                    }
                    next_extend = Instant::now() + extend_every;
                }
            }
        }
        if lost {
            send(PeerEvent::LeaseLost);
            continue;
        }
        let result = result_of(&claimed.payload);
        stalls.freeze_if_asked(stall);
        effects.commit(claimed.task_id, claimed.token, result);
        if settings.done_with_next_claim {
            finished = Some(claimed);
            continue;
        }
        let accepted = consumer.done(&claimed).await?;
        send(PeerEvent::Done {
            task_id: claimed.task_id,
            at: Instant::now(),
            accepted,
        });
    }
}

/// The conductor's fold of the workers' events.
#[derive(Debug, Default)]
struct Fold {
    claim_latency: LatencyRecorder,
    warmup_claims_per_worker: u64,
    warmup_discarded: u64,
    claims_per_slot: HashMap<usize, u64>,
    first_win: HashMap<Uuid, Instant>,
    wins_per_task: HashMap<Uuid, u64>,
    wins: u64,
    reclaimed: u64,
    dead: u64,
    empty: u64,
    fenced_dones: u64,
    accepted_dones: HashMap<Uuid, u64>,
    finished: HashSet<Uuid>,
    /// `finished` in the order the workers reported them, each when its worker learned it, for
    /// the conductor's [`FinishedTally`] (a count that costs the new finishes, not the run's
    /// tasks, per check).
    finished_order: Vec<Finish>,
    working: HashSet<usize>,
}

impl Fold {
    fn apply(&mut self, slot: usize, event: PeerEvent) {
        match event {
            PeerEvent::Won {
                task_id,
                at,
                latency,
                reclaimed,
            } => {
                self.wins += 1;
                self.reclaimed += u64::from(reclaimed);
                *self.wins_per_task.entry(task_id).or_insert(0) += 1;
                self.first_win.entry(task_id).or_insert(at);
                self.working.insert(slot);
                if let Some(latency) = latency {
                    let seen = self.claims_per_slot.entry(slot).or_insert(0);
                    *seen += 1;
                    if *seen > self.warmup_claims_per_worker {
                        self.claim_latency.record(latency);
                    } else {
                        self.warmup_discarded += 1;
                    }
                }
            }
            PeerEvent::DeadLettered { task_id, at } => {
                self.dead += 1;
                *self.wins_per_task.entry(task_id).or_insert(0) += 1;
                self.finish(task_id, at);
            }
            PeerEvent::Empty => self.empty += 1,
            PeerEvent::LeaseLost => {
                self.working.remove(&slot);
            }
            PeerEvent::Done {
                task_id,
                at,
                accepted,
            } => {
                self.working.remove(&slot);
                if accepted {
                    *self.accepted_dones.entry(task_id).or_insert(0) += 1;
                    self.finish(task_id, at);
                } else {
                    self.fenced_dones += 1;
                }
            }
        }
    }

    fn finish(&mut self, task_id: Uuid, at: Instant) {
        if self.finished.insert(task_id) {
            self.finished_order.push(Finish {
                task_id,
                done_offset: None,
                observed_at: at,
            });
        }
    }

    fn working_slots(&self) -> Vec<usize> {
        let mut slots: Vec<usize> = self.working.iter().copied().collect();
        slots.sort_unstable();
        slots
    }
}

/// Runs one configuration against `peer`'s server.
pub async fn run(
    endpoint: &mut Endpoint,
    peer: Peer,
    config: QueueRunConfig,
    baseline: &Baseline,
) -> anyhow::Result<QueueOutcome> {
    anyhow::ensure!(config.workers > 0 && config.tasks > 0, "an empty run");
    endpoint.check_alive()?;
    let url = endpoint.url.clone();
    let keys = RunKeys::fresh();
    match peer {
        Peer::Redis | Peer::RedisFsync => {
            redis::prepare(&url, &keys.redis, peer == Peer::RedisFsync).await?;
        }
        Peer::Postgres | Peer::PostgresAsync => postgres::prepare(&url).await?,
        Peer::JetstreamWorkqueue => {
            jetstream::prepare(&url, &keys.jetstream, config.lease_ms).await?;
        }
    }
    let outcome = conduct(&url, &keys, peer, config, baseline).await;
    let cleaned = match peer {
        Peer::Redis | Peer::RedisFsync => redis::clean_up(&url, &keys.redis).await,
        Peer::Postgres | Peer::PostgresAsync => postgres::clean_up(&url).await,
        Peer::JetstreamWorkqueue => jetstream::clean_up(&url, &keys.jetstream).await,
    };
    if let Err(error) = endpoint.check_alive() {
        return Err(error.context(format!("{} died during the run", peer.name())));
    }
    let outcome = outcome?;
    cleaned?;
    Ok(outcome)
}

async fn conduct(
    url: &str,
    keys: &RunKeys,
    peer: Peer,
    config: QueueRunConfig,
    baseline: &Baseline,
) -> anyhow::Result<QueueOutcome> {
    let settings = WorkerSettings {
        peer,
        work_ms: config.work_ms,
        lease_ms: config.lease_ms,
        max_expired_leases: u64::from(QueueConfig::default().max_expired_leases.get()),
        done_with_next_claim: config.done_with_next_claim,
    };
    let effects = Effects::unfenced();
    let stalls = Stalls::new(config.lease_ms);
    let (submitted_tx, mut submitted_rx) = mpsc::unbounded_channel();
    let mut submitted: HashMap<Uuid, Instant> = HashMap::with_capacity(config.tasks);
    let submitter = Submitter::connect(url, peer, keys).await?;
    let mut submitter = Some(submitter);
    // Asks the server whether the run is over when the workers' reports cannot tell: a worker
    // killed right after its done reached the server never reports it.
    let mut checker = Submitter::connect(url, peer, keys).await?;
    if config.arrival == Arrival::Backlog {
        let s = submitter.take().expect("the submitter");
        submitter = Some(enqueue(s, config.tasks, None, submitted_tx.clone()).await?);
        while let Ok((id, at)) = submitted_rx.try_recv() {
            submitted.insert(id, at);
        }
    }

    let (events_tx, mut events_rx) = mpsc::unbounded_channel();
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let (start, gate) = start_line();
    let new_slot = |slot| {
        start_worker(
            url,
            keys,
            settings,
            slot,
            &effects,
            &stalls,
            events_tx.clone(),
            shutdown_rx.clone(),
            gate.clone(),
        )
    };
    let mut slots = Vec::with_capacity(config.workers);
    for slot in 0..config.workers {
        slots.push(new_slot(slot).await?);
    }
    let cpu_before = cpu::process_cpu_seconds();
    let started = Instant::now();
    start.open();
    let enqueuer = (config.arrival == Arrival::Trickle).then(|| {
        let s = submitter.take().expect("the submitter");
        tokio::spawn(enqueue(
            s,
            config.tasks,
            Some(config.trickle_per_s),
            submitted_tx.clone(),
        ))
    });
    let deadline = started + Duration::from_millis(config.max_run_ms);
    let mut fold = Fold {
        warmup_claims_per_worker: config.warmup_claims_per_worker,
        ..Fold::default()
    };
    let mut chaos = config.chaos.map(|c| ChaosPlan::new(c, config.workers));
    let mut stalled_slots = Vec::new();
    let mut replaced = 0u64;
    let mut check = tokio::time::interval(CHECK_EVERY);
    check.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // Counting the finished tasks by looking each submitted one up, every check, cost the
    // harness 18 % more CPU in runs of 30 000 tasks (1.01 against 0.82 s) and Redis-with-fsync
    // 13 % of its tasks/s (25 282 against 29 215, medians of 5 runs at 30 workers, no work).
    let mut finished_tally = FinishedTally::default();
    let ended_at = loop {
        tokio::select! {
            Some((slot, event)) = events_rx.recv() => fold.apply(slot, event),
            Some((id, at)) = submitted_rx.recv() => { submitted.insert(id, at); }
            _ = check.tick() => {
                let now = Instant::now();
                let finished = finished_tally.update(&fold.finished_order, &submitted);
                let working = fold.working_slots();
                let stalled_busy = !stalls.all_ended()
                    || stalled_slots.iter().any(|s| working.contains(s));
                if submitted.len() == config.tasks && finished == config.tasks && !stalled_busy {
                    break finished_tally.last_finished_at(|_| None).unwrap_or(now);
                }
                let killed = chaos.as_ref().filter(|c| c.mode() == ChaosMode::Crash).map_or(0, ChaosPlan::killed);
                if killed > 0 && submitted.len() == config.tasks && finished + killed >= config.tasks {
                    // Every entry has been handed out by now (at most `killed` tasks are
                    // unreported, and those were being worked on), so the server's count is
                    // final.
                    let (done, dead) = checker.final_counts(config.tasks as u64).await?;
                    if done + dead == config.tasks as u64 && !stalled_busy {
                        break now;
                    }
                }
                if now >= deadline {
                    tracing::warn!(finished, tasks = config.tasks, peer = peer.name(), "peer run hit its time limit");
                    break now;
                }
                if let Some(index) = slots.iter().position(|s| !s.killed && s.thread.is_finished()) {
                    let outcome = slots.swap_remove(index).thread.join(SHUTDOWN_LIMIT).await;
                    bail!("{} worker {index} stopped during the run: {outcome:?}", peer.name());
                }
                if let Some(plan) = &mut chaos {
                    for victim in plan.victims(finished, config.tasks, &working) {
                        match plan.mode() {
                            ChaosMode::Crash => {
                                slots[victim].thread.kill();
                                slots[victim].killed = true;
                                fold.working.remove(&victim);
                            }
                            ChaosMode::Stall => {
                                slots[victim].stall.store(true, Ordering::SeqCst);
                                stalled_slots.push(victim);
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
    let elapsed_s = ended_at.duration_since(started).as_secs_f64();
    let process_cpu_s = cpu::process_cpu_seconds() - cpu_before;
    shutdown_tx.send_replace(true);
    for (index, slot) in slots.into_iter().enumerate() {
        if slot.killed {
            continue;
        }
        match slot.thread.join(SHUTDOWN_LIMIT).await {
            Joined::Returned(Ok(())) => {}
            Joined::Returned(Err(error)) => {
                tracing::warn!(worker = index, %error, "peer worker ended badly");
            }
            Joined::TimedOut => tracing::warn!(worker = index, "peer worker did not stop in time"),
        }
    }
    let mut submitter = match enqueuer {
        Some(enqueuer) => enqueuer
            .await
            .map_err(|e| anyhow!("the enqueuer failed: {e}"))??,
        None => submitter.take().expect("the submitter"),
    };
    drop(events_tx);
    while let Ok((slot, event)) = events_rx.try_recv() {
        fold.apply(slot, event);
    }
    while let Ok((id, at)) = submitted_rx.try_recv() {
        submitted.insert(id, at);
    }
    let tasks_total = submitted.len() as u64;
    let (completed, dead_lettered) = submitter.final_counts(tasks_total).await?;

    let claim_latency_us = fold.claim_latency.percentiles();
    let mut enqueue_to_claim = LatencyRecorder::new();
    for (task_id, won_at) in &fold.first_win {
        if let Some(at) = submitted.get(task_id) {
            enqueue_to_claim.record(won_at.saturating_duration_since(*at));
        }
    }
    let claim_p50_ms = claim_latency_us.p50 / 1_000.0;
    let mut ceiling_tasks_per_s = crate::queue::ceiling_tasks_per_s(
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
    let attempts = fold.wins + fold.dead;
    let mut histogram: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
    for id in submitted.keys() {
        *histogram
            .entry(fold.wins_per_task.get(id).copied().unwrap_or(0))
            .or_insert(0) += 1;
    }
    let effect_counts = effects.counts();
    let run = QueueRun {
        system: peer.name(),
        broker_process: None,
        broker_write_mode: None,
        repetition: config.repetition,
        workers: config.workers,
        pool: 1,
        pool_connection: crate::queue::PoolConnection::Own,
        pick: None,
        arrival: config.arrival,
        claim_ack: None,
        chaos: config.chaos.map(|c| c.mode),
        work_ms: config.work_ms,
        lease_ms: config.lease_ms,
        arrival_per_s,
        claim_latency_us,
        claim_latency_samples: fold.claim_latency.count(),
        warmup_claims_discarded: fold.warmup_discarded,
        done_with_next_claim: config.done_with_next_claim,
        enqueue_to_claim_us: enqueue_to_claim.percentiles(),
        attempts,
        wins: fold.wins,
        lost_races: 0,
        lost_race_pct: 0.0,
        empty_claims: Some(fold.empty),
        deep_backlog_claims: None,
        lost_race_pct_deep_backlog: None,
        attempts_per_task: attempts as f64 / tasks_total.max(1) as f64,
        attempts_histogram: histogram.into_iter().collect(),
        duplicate_executions: fold.wins.saturating_sub(fold.first_win.len() as u64),
        expired_leases: fold.reclaimed + fold.dead,
        fenced_dones: fold.fenced_dones,
        duplicate_dones: fold
            .accepted_dones
            .values()
            .map(|n| n.saturating_sub(1))
            .sum(),
        effects_committed: effect_counts.committed,
        duplicate_effects: effect_counts.duplicates,
        superseded_effects: effect_counts.superseded,
        refused_effects: effect_counts.refused,
        tasks_total,
        tasks_completed: completed,
        tasks_never_completed: tasks_total.saturating_sub(completed + dead_lettered),
        dead_lettered,
        violations: 0,
        workers_killed: chaos
            .as_ref()
            .filter(|c| c.mode() == ChaosMode::Crash)
            .map_or(0, |c| c.killed() as u64),
        workers_stalled: stalls.started(),
        workers_replaced: replaced,
        tasks_per_s: completed as f64 / elapsed_s.max(f64::MIN_POSITIVE),
        ceiling_tasks_per_s,
        elapsed_s,
        process_cpu_s,
        vs_baseline: QueueRatios::of(&claim_latency_us, baseline),
    };
    Ok(QueueOutcome {
        run,
        claim_latency: fold.claim_latency,
    })
}
