//! The worker, in one place: start it, then its loop — pick, claim, learn the verdict, hold the
//! lease (work, extends), and the done, which rides with the next claim.
//!
//! One claim, followed from the pick to won or lost, opens three files: this one
//! ([`Worker::claim`]: append, wait for the verdict at the offset the append returned), `view.rs`
//! (the claims follower applies that record and keeps the verdict for the worker) and
//! `state/verdict.rs` (the rules that decide it). Counters, events and log lines are one call
//! each into `observe.rs`; the rare adoption of a lease of one's own is `adoption.rs`.
//!
//! # The local deadline
//!
//! A void extend is one way to learn the lease is gone; silence is the other. If extends cannot be
//! appended (the broker is unreachable, the appends keep failing), no verdict ever says "void",
//! yet the lease lapses all the same, and someone else may claim the task. So the worker keeps a
//! deadline of its own, by its monotonic clock: `valid_until` = the moment the last *confirmed*
//! grant or renewal was issued + `lease_ms` − the configured maximum clock skew between writers
//! ([`WorkerConfig::max_clock_skew_ms`], a tenth of the lease unless set). The record's timestamp
//! is taken after that moment, so the log's lease runs at least `lease_ms` from it by the
//! holder's clock, and a claimer whose clock runs ahead by ε can win at the earliest ε before
//! that. When `valid_until` passes without a newer confirmation, the worker drops the work and
//! reports the lease lost — it stops *before* the log would let another worker in, as long as
//! no two writers' clocks differ by more than the configured skew. (This cannot help a worker whose whole process is paused; that case is
//! the fencing sink's, `sink.rs`.)
//!
//! The work and the extends run side by side (`select!`), so a slow extend round trip never
//! pauses the work and a long task never starves the extends. If an extend turns out void the
//! lease is lost — someone else's claim won (`StaleToken`), or the extend came too late
//! (`Expired`) and anyone may claim the task now — and the work is abandoned: a done would be
//! fenced, or would race a new holder. If the work finishes first, an extend still in flight is
//! dropped; its record, if written, is harmless.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use booblik_protocol::AckPolicy;
use bytes::Bytes;
use rand::SeedableRng;
use rand::rngs::StdRng;
use tokio::sync::mpsc;
use uuid::Uuid;

use super::adoption::UnacknowledgedClaims;
use super::observe::Observer;
use super::pool::WorkerPool;
use super::view::{Candidate, LiveView, OwnVerdict, StateView};
use super::work::{Assignment, WorkFn, simulated_work};
use super::{WorkerConfig, WorkerEvent, WorkerStats, wall_clock_ms};
use crate::engine::{Ack, EngineError, EngineKind, IntoEngine, PartitionLog};
use crate::queue::pick::{Decision, Deference, Pick, Ranked};
use crate::queue::record::{Claim, ClaimsRecord, Done, Extend, Heartbeat, Release};
use crate::queue::state::{ClaimLostReason, Event, QueueState, Rejection};

/// Longest wait for the verdict on one of the worker's own records. A follower that cannot get
/// past the worker's offset in this time means the broker or the connection is unwell: the
/// worker stops rather than work without a verdict.
pub const VERDICT_TIMEOUT_MS: u64 = 30_000;
/// Longest idle wait between two looks at the claimable set when neither log moves and no
/// known lease is about to lapse. A safety net only: the waits that matter are event-driven.
pub const MAX_IDLE_WAIT_MS: u64 = 5_000;
/// Pause after a failed append before the worker tries again; it doubles with every further
/// failure in a row, up to [`MAX_APPEND_RETRY_BACKOFF_MS`].
pub const APPEND_RETRY_BACKOFF_MS: u64 = 100;
/// The longest pause between two attempts at an append. With it, the
/// [`MAX_CONSECUTIVE_APPEND_FAILURES`] claims and [`MAX_DONE_ATTEMPTS`] dones a worker tries
/// span an engine's outage: a JetStream R3 stream takes 6–9 s to accept writes again after its
/// leader is killed (`docs/jetstream.md`).
pub const MAX_APPEND_RETRY_BACKOFF_MS: u64 = 1_000;
/// Failed claim appends in a row after which the worker stops (about 45 s of failures, with the
/// growing backoff).
pub const MAX_CONSECUTIVE_APPEND_FAILURES: u32 = 50;
/// [`WorkerConfig::max_clock_skew_ms`] when it is not set, in percent of the lease: the local
/// deadline is then `issued_at + lease_ms × (100 − this) / 100` (see "The local deadline").
pub const DEFAULT_CLOCK_SKEW_PERCENT: u64 = 10;
/// Longest a rendezvous worker defers, over one idle spell, to the owners of the tasks it sees
/// before it claims the task it ranks best anyway. Long enough for an idle owner to see a new
/// task and have its claim in the log (a FORCED claim round trip is about a millisecond here),
/// short enough that a task whose owner is gone waits little. Chosen, not measured.
pub const RENDEZVOUS_MAX_DEFERENCE_MS: u64 = 25;
/// After a lost race a rendezvous worker waits a random time up to this before its next pick,
/// so that two workers whose views disagreed do not collide again at once.
pub const RENDEZVOUS_LOST_RACE_BACKOFF_MS: u64 = 10;
/// An idle rendezvous worker appends a heartbeat once it has appended nothing for the lease
/// divided by this: it stays live (its last record younger than a lease) with one to spare.
pub const HEARTBEATS_PER_LEASE: u64 = 2;
/// Longest a clean shutdown waits for its release to be appended and judged. A shutdown must not
/// hang on an unreachable broker; a release that does not make it leaves the lease to lapse, as
/// before releases existed.
pub const RELEASE_TIMEOUT_MS: u64 = 2_000;
/// Attempts at appending a done before giving up (the lease then lapses and the task is run
/// again); with the growing backoff they span about 12 s. Repeating a done is safe: a repeat of
/// an accepted done is a no-op by the rules.
pub const MAX_DONE_ATTEMPTS: u32 = 15;

/// The pause after the `failures`-th failed append in a row (from 1): [`APPEND_RETRY_BACKOFF_MS`],
/// doubled with each further failure, at most [`MAX_APPEND_RETRY_BACKOFF_MS`].
pub fn append_retry_backoff(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    Duration::from_millis((APPEND_RETRY_BACKOFF_MS << doublings).min(MAX_APPEND_RETRY_BACKOFF_MS))
}

/// The worker's local deadline for a lease of `lease_ms` confirmed as issued at `issued_at` (a
/// grant or a renewal), when writers' clocks differ by at most `max_clock_skew_ms`: after it
/// the worker must not act under the lease any more. (A validated config has the skew below the
/// lease; a larger one leaves no time at all.)
pub fn local_lease_deadline(issued_at: Instant, lease_ms: u64, max_clock_skew_ms: u64) -> Instant {
    issued_at + Duration::from_millis(lease_ms.saturating_sub(max_clock_skew_ms))
}

/// Why a worker refuses to start: the claims log no longer starts at its origin (the offset of the
/// first record it ever had: [`Bounds::origin`](crate::engine::Bounds), 0 on booblik, 1 on
/// JetStream).
///
/// The verdict is a fold over the whole claims log. Records dropped from its head may have granted
/// leases that are still live, or counted the expiries that dead-letter a task; a worker that
/// folded only what is left would judge claims differently from the workers that read it all —
/// two holders of one task, each sure of its verdict. Nothing the worker can do fixes that; the
/// topic's retention must keep the whole claims log (`docs/task-queue.md`, *Costs and limits*).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the claims log {topic} starts at offset {log_start_offset}, above its origin {origin}: \
     retention dropped claims records, and verdicts over what is left would differ from other \
     readers'. The claims topic's retention (booblik's --retention-ms / --retention-bytes, a \
     JetStream stream's limits) must keep the whole claims log"
)]
pub struct ClaimsLogTruncated {
    /// The claims topic.
    pub topic: String,
    /// Its first offset still readable.
    pub log_start_offset: i64,
    /// The offset its first record ever had (the engine's origin).
    pub origin: i64,
}

/// A worker: two followers feeding a live view of the queue, and the claim/work loop.
///
/// Start it with [`Worker::start`], take its [`events`](Self::events) if you want them, then
/// [`run`](Self::run) it until a shutdown future resolves. Dropping the worker stops its
/// followers (unless it is a member of a [`WorkerPool`], which keeps them). It runs on any engine
/// ([`LogEngine`](crate::engine::LogEngine), or booblik's `Client`): a worker started on its own
/// opens the two partitions itself (on booblik each has connections of its own: the followers'
/// reads, the claims appends).
pub struct Worker {
    config: WorkerConfig,
    appender: Appender,
    work: WorkFn,
    observer: Observer,
    current: Mutex<Option<(Uuid, i64)>>,
    /// A task whose work is over and effect committed, its done not yet acknowledged: it rides
    /// with the next claim, or goes alone when there is nothing to claim or at shutdown.
    pending_done: Mutex<Option<Finished>>,
    /// Claims whose append failed (fate unknown), and tokens given up: `adoption.rs`.
    unacknowledged_claims: Mutex<UnacknowledgedClaims>,
    /// High watermarks of `tasks` and `claims` at start: `run` catches up to them first.
    start_offsets: (i64, i64),
    /// The pool whose view this worker reads (a pool of its own unless started in one); it
    /// keeps the followers running while the worker lives.
    pool: WorkerPool,
    running: AtomicBool,
}

/// A lease the worker holds after a claim.
#[derive(Debug, Clone, Copy)]
struct Grant {
    token: i64,
    /// When the claim that won was issued (no later than its timestamp was taken): the local
    /// lease deadline runs from here.
    issued_at: Instant,
    /// When to send the first extend.
    first_extend_at: Instant,
}

/// A task whose work is over and whose effect is committed, its done not yet appended: it goes
/// in one batch with the worker's next claim ([`WorkerConfig::done_with_next_claim`]), or alone
/// when there is nothing to claim.
#[derive(Debug, Clone)]
struct Finished {
    task_id: Uuid,
    token: i64,
    result: Vec<u8>,
}

impl Finished {
    /// The done record (its timestamp taken now, as it is about to be appended).
    fn done(&self, worker_id: Uuid) -> ClaimsRecord {
        Done {
            task_id: self.task_id,
            worker_id,
            token: self.token,
            done_at_ms: wall_clock_ms(),
            result: self.result.clone(),
        }
        .into()
    }
}

/// Whether a claim made it into the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attempt {
    /// Appended; the verdict is known and acted upon (lost, or the work is over).
    Appended {
        /// Whether the claim won (or adopted a lease of this run).
        won: bool,
    },
    /// The append failed; whether it was written is unknown (if it was and won, the lease lapses
    /// and the task is claimed again — or this run adopts it, `adoption.rs`).
    NotAppended,
}

/// What became of one extend.
enum ExtendOutcome {
    /// The lease now runs `lease_ms` from `issued_at`.
    Renewed { issued_at: Instant },
    /// The lease is gone.
    Void { reason: Rejection },
    /// The append failed; try again soon.
    NotAppended,
}

impl Worker {
    /// Validates `config`, checks both topics (one partition each), and starts the two
    /// followers from each partition's start: a [`WorkerPool`] of one. Refuses a claims log that
    /// no longer starts at its origin ([`ClaimsLogTruncated`]). The worker does simulated work
    /// ([`simulated_work`]).
    pub async fn start(engine: impl IntoEngine, config: WorkerConfig) -> anyhow::Result<Worker> {
        let work = simulated_work(config.work_ms);
        Self::start_with_work(engine, config, work).await
    }

    /// [`start`](Self::start) with a work function of your own.
    pub async fn start_with_work(
        engine: impl IntoEngine,
        config: WorkerConfig,
        work: WorkFn,
    ) -> anyhow::Result<Worker> {
        let engine = engine.into_engine();
        let pool = WorkerPool::start(Arc::clone(&engine), &config).await?;
        pool.start_worker_with_work(engine, config, work).await
    }

    /// A member of `pool` (`pool.rs` checked its config against the pool's), appending to
    /// `claims`, that joined when the `tasks` and `claims` high watermarks were `ends`.
    pub(super) fn member(
        pool: WorkerPool,
        engine: EngineKind,
        claims: Arc<dyn PartitionLog>,
        config: WorkerConfig,
        work: WorkFn,
        ends: (i64, i64),
    ) -> anyhow::Result<Worker> {
        let claim_ack = engine_ack(config.claim_ack)?;
        let (tasks_end, claims_end) = ends;
        tracing::info!(
            worker_id = %config.worker_id,
            %engine,
            tasks_end,
            claims_end,
            lease_ms = config.lease_ms,
            pick = ?config.pick,
            claim_ack = config.claim_ack.name(),
            "worker started"
        );
        Ok(Worker {
            observer: Observer::new(config.worker_id),
            appender: Appender::new(claims, claim_ack),
            config,
            work,
            current: Mutex::new(None),
            pending_done: Mutex::new(None),
            unacknowledged_claims: Mutex::new(UnacknowledgedClaims::default()),
            start_offsets: ends,
            pool,
            running: AtomicBool::new(false),
        })
    }

    /// The event stream. The first call creates it and returns the receiver; later calls return
    /// `None`. Events before the first call are not kept; events are dropped once the receiver
    /// is dropped, and while [`MAX_QUEUED_EVENTS`](super::MAX_QUEUED_EVENTS) are unread (counted
    /// in [`WorkerStats::events_dropped`]): the worker never waits for an observer.
    pub fn events(&mut self) -> Option<mpsc::Receiver<WorkerEvent>> {
        self.observer.take_events()
    }

    /// A snapshot of the worker's counters.
    pub fn stats(&self) -> WorkerStats {
        self.observer.stats()
    }

    /// `(task_id, token)` while the worker is working on a task under a lease.
    pub fn current_task(&self) -> Option<(Uuid, i64)> {
        *self.current.lock().expect("current task lock")
    }

    /// The worker's identity.
    pub fn worker_id(&self) -> Uuid {
        self.config.worker_id
    }

    /// The configuration.
    pub fn config(&self) -> &WorkerConfig {
        &self.config
    }

    /// Records of either log that did not decode and were skipped (every reader skips the same
    /// ones; a non-zero count means a writer with another format version, or corruption).
    pub fn undecodable_records(&self) -> u64 {
        self.live_view().undecodable_records()
    }

    /// A read-only handle on the worker's live queue state.
    pub fn view(&self) -> StateView {
        StateView::new(Arc::clone(self.live_view()))
    }

    /// Catches up with both logs, then claims and works until `shutdown` resolves (→ the final
    /// stats) or the worker cannot go on (→ the error: a follower stopped, no verdict in
    /// [`VERDICT_TIMEOUT_MS`], appends failing [`MAX_CONSECUTIVE_APPEND_FAILURES`] times).
    ///
    /// At shutdown, work in progress is dropped without a done. At
    /// [`ProtocolLevel::V2`](crate::queue::record::ProtocolLevel) the worker then appends a
    /// release (waiting at most [`RELEASE_TIMEOUT_MS`]), which frees the task at once without
    /// counting an expired lease; otherwise the lease lapses and another worker takes the task
    /// over (at-least-once). Takes `&self` so that callers can watch
    /// [`stats`](Self::stats) and [`current_task`](Self::current_task) while it runs; running
    /// one worker twice at once is refused.
    pub async fn run(&self, shutdown: impl Future<Output = ()>) -> anyhow::Result<WorkerStats> {
        anyhow::ensure!(
            !self.running.swap(true, Ordering::SeqCst),
            "worker {} is already running",
            self.config.worker_id
        );
        let mut serve = Box::pin(self.serve());
        let outcome = tokio::select! {
            outcome = &mut serve => outcome,
            () = shutdown => Ok(()),
        };
        // The task in hand, read before the loop is dropped (dropping it clears it).
        let held = self.current_task();
        // Dropping the loop stops the work: nothing happens under the lease after this, so it
        // may be handed back.
        drop(serve);
        // A finished task's effect is committed: its done must not be left to the lease (the
        // task would run again). It may already be in the log; a repeat is harmless.
        if outcome.is_ok() && self.pending_done().is_some() {
            let done = self.commit_pending_done();
            let _ = tokio::time::timeout(Duration::from_millis(RELEASE_TIMEOUT_MS), done).await;
        }
        if outcome.is_ok()
            && let Some((task_id, token)) = held
            && self.config.protocol.writes_releases()
        {
            self.release(task_id, token).await;
        }
        if outcome.is_ok() && self.writes_heartbeats() {
            // "Gone": a heartbeat with no lease makes this worker not live at once, so others
            // stop deferring to it (bounded by the release timeout, like the release).
            let leaving = self.append_heartbeat(0);
            let _ = tokio::time::timeout(Duration::from_millis(RELEASE_TIMEOUT_MS), leaving).await;
        }
        self.running.store(false, Ordering::SeqCst);
        *self.current.lock().expect("current task lock") = None;
        outcome?;
        let stats = self.stats();
        tracing::info!(worker_id = %self.config.worker_id, ?stats, "worker stopped");
        Ok(stats)
    }

    /// The loop; returns only with an error.
    async fn serve(&self) -> anyhow::Result<()> {
        let (tasks_end, claims_end) = self.start_offsets;
        self.live_view()
            .wait_caught_up(tasks_end, claims_end)
            .await?;
        tracing::info!(
            worker_id = %self.config.worker_id,
            tasks_end,
            claims_end,
            unfinished = self.live_view().with_state(QueueState::unfinished_count),
            "caught up with both logs"
        );
        let mut rng = StdRng::from_os_rng();
        let mut progress = self.live_view().subscribe();
        let mut append_failures = 0u32;
        // Rendezvous only: how long a task another idle worker owns is left to it.
        let mut deference = Deference::new(RENDEZVOUS_MAX_DEFERENCE_MS);
        let started = Instant::now();
        loop {
            progress.borrow_and_update();
            if let Some(error) = self.live_view().failure() {
                return Err(error.into());
            }
            let now_ms = wall_clock_ms();
            let picked =
                self.live_view()
                    .pick(self.config.worker_id, now_ms, self.config.pick, &mut rng);
            // Rendezvous: a task another idle worker ranks first is left to it, for a bounded
            // time (`pick/deference.rs`); then this worker claims the task it ranks best.
            if let Some(candidate) = &picked {
                let monotonic_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                let ranked = Ranked {
                    task_id: candidate.task_id,
                    ranked_first: candidate.ranked_first,
                };
                if let Decision::Wait { wait_ms } = deference.decide(&ranked, monotonic_ms) {
                    // The done of the task just finished does not wait with us.
                    if self.commit_pending_done().await? {
                        continue;
                    }
                    self.heartbeat_if_due().await;
                    tokio::select! {
                        _ = progress.changed() => {}
                        () = tokio::time::sleep(Duration::from_millis(wait_ms)) => {}
                    }
                    continue;
                }
            }
            let Some(candidate) = picked else {
                // Nothing claimable: wait for either log to move, for the next known lease to
                // lapse, or for the next heartbeat — never a busy loop. Whoever this worker
                // deferred to took the task, so the next deference starts afresh.
                deference.nothing_claimable();
                // The done of the task just finished does not wait with us.
                if self.commit_pending_done().await? {
                    continue;
                }
                self.observer.idle();
                self.heartbeat_if_due().await;
                let wait_ms = self
                    .live_view()
                    .next_lapse_after(now_ms)
                    .map_or(MAX_IDLE_WAIT_MS, |lapse_ms| lapse_ms - now_ms + 1)
                    .min(MAX_IDLE_WAIT_MS)
                    .min(self.next_heartbeat_in_ms().unwrap_or(MAX_IDLE_WAIT_MS));
                tokio::select! {
                    _ = progress.changed() => {}
                    () = tokio::time::sleep(Duration::from_millis(wait_ms)) => {}
                }
                continue;
            };
            match self.claim(candidate).await? {
                Attempt::Appended { won: false } if self.config.pick == Pick::Rendezvous => {
                    append_failures = 0;
                    let backoff_ms =
                        rand::Rng::random_range(&mut rng, 0..=RENDEZVOUS_LOST_RACE_BACKOFF_MS);
                    tokio::time::sleep(Duration::from_millis(backoff_ms)).await;
                }
                Attempt::Appended { .. } => append_failures = 0,
                Attempt::NotAppended => {
                    append_failures += 1;
                    anyhow::ensure!(
                        append_failures < MAX_CONSECUTIVE_APPEND_FAILURES,
                        "{append_failures} claim appends failed in a row"
                    );
                    tokio::time::sleep(append_retry_backoff(append_failures)).await;
                }
            }
        }
    }

    /// One claim, from the pick to won or lost: append it; the offset the append returns is how
    /// the worker recognises its claim (the record carries no token, because the token *is* that
    /// offset); wait until its own claims follower has applied that offset, and read the
    /// verdict. If it won, hold the lease until the work is over (or the lease is lost).
    ///
    /// The previous task's done, if it is pending, goes in the same append just before the
    /// claim: one round trip for both, and on booblik one fsync. Its verdict is read first (the
    /// follower applies the two in order).
    ///
    /// The round trip (append issued → acknowledged and applied) is the claim latency the load
    /// experiment measures.
    async fn claim(&self, candidate: Candidate) -> anyhow::Result<Attempt> {
        let task_id = candidate.task_id;
        let worker_id = self.config.worker_id;
        let issued_at = Instant::now();
        let claim = Claim {
            task_id,
            worker_id,
            claimed_at_ms: wall_clock_ms(),
            lease_ms: self.config.lease_ms,
        };
        let done = self.pending_done();
        let mut records = Vec::with_capacity(2);
        if let Some(done) = &done {
            records.push(done.done(worker_id));
        }
        records.push(claim.into());
        // FORCED by default: the verdict must come from a durable prefix (the module docs of
        // `worker`).
        let offsets = match self.appender.append(&records).await {
            Ok(offsets) => offsets,
            Err(error) => {
                tracing::warn!(%worker_id, %task_id, %error, "claim append failed; its fate is unknown");
                self.adoption().remember(task_id, issued_at);
                self.live_view().stop_claiming(worker_id);
                // The done's fate is unknown too: append it alone (a repeat of an accepted
                // done is a no-op by the rules).
                self.commit_pending_done().await?;
                return Ok(Attempt::NotAppended);
            }
        };
        let acknowledged_at = Instant::now();
        let offset = *offsets.last().expect("one offset per record");
        if let Some(done) = done {
            *self.pending_done.lock().expect("pending done lock") = None;
            self.done_verdict(&done, offsets[0]).await?;
        }
        self.observer.claim_appended(task_id, offset);

        // The claims follower applies the record at `offset` and keeps the verdict for us
        // (`view.rs`); the rules that decide it are in `state/verdict.rs`.
        let verdict = self.own_verdict(offset).await?;
        let grant = match &verdict.event {
            Event::ClaimWon { token, .. } => Some(Grant {
                token: *token,
                issued_at,
                first_extend_at: issued_at + self.config.extend_every(),
            }),
            // An earlier claim under our own id holds the task: ours only if this run wrote it
            // (`adoption.rs`). Its grant time is unknown, so extend now.
            Event::ClaimLost {
                reason:
                    ClaimLostReason::AlreadyLeased {
                        holder_token,
                        holder_worker_id,
                        ..
                    },
                ..
            } if *holder_worker_id == worker_id => self
                .adoption()
                .adopt(
                    worker_id,
                    task_id,
                    *holder_token,
                    self.live_view().own_from(worker_id),
                )
                .map(|claim_issued_at| Grant {
                    token: *holder_token,
                    issued_at: claim_issued_at,
                    first_extend_at: Instant::now(),
                }),
            Event::ClaimLost { .. } | Event::TaskDeadLettered { .. } => None,
            other => anyhow::bail!(
                "the verdict on claim offset {offset} is not a claim verdict: {other:?}"
            ),
        };
        let won = grant.is_some();
        let claim_latency = verdict.applied_at.max(acknowledged_at) - issued_at;
        self.observer.verdict(
            task_id,
            offset,
            &verdict.event,
            grant.is_some(),
            claim_latency,
        );
        if let Some(grant) = grant {
            self.hold_lease(task_id, grant, candidate.payload).await?;
        }
        Ok(Attempt::Appended { won })
    }

    /// Works on `task_id` under `grant` until the work is over or the lease is lost. The done
    /// is left to ride with the next claim ([`WorkerConfig::done_with_next_claim`]), or appended
    /// here and its verdict read.
    async fn hold_lease(
        &self,
        task_id: Uuid,
        grant: Grant,
        payload: Vec<u8>,
    ) -> anyhow::Result<()> {
        let token = grant.token;
        let _current = CurrentTask::set(self, task_id, token);
        self.observer.work_started(task_id, token);

        let mut work = (self.work)(Assignment {
            task_id,
            token,
            payload,
            view: StateView::new(Arc::clone(self.live_view())),
        });
        let extend_every = self.config.extend_every();
        let mut next_extend_at = grant.first_extend_at;
        let mut valid_until = self.config.local_lease_deadline(grant.issued_at);
        let result = loop {
            tokio::select! {
                biased;
                // First: past the local deadline nothing else may happen under this lease.
                () = tokio::time::sleep_until(valid_until.into()) => {
                    self.lease_lost(task_id, token, "no renewal confirmed before the local lease deadline");
                    return Ok(());
                }
                result = &mut work => break result,
                outcome = self.extend_at(next_extend_at, task_id, token) => match outcome? {
                    ExtendOutcome::Renewed { issued_at } => {
                        next_extend_at = issued_at + extend_every;
                        valid_until = self.config.local_lease_deadline(issued_at);
                    }
                    ExtendOutcome::NotAppended => {
                        next_extend_at = Instant::now() + Duration::from_millis(APPEND_RETRY_BACKOFF_MS);
                    }
                    ExtendOutcome::Void { reason } => {
                        self.lease_lost(task_id, token, &format!("extend void: {reason:?}"));
                        return Ok(());
                    }
                },
            }
        };
        let finished = Finished {
            task_id,
            token,
            result,
        };
        *self.pending_done.lock().expect("pending done lock") = Some(finished);
        if !self.config.done_with_next_claim {
            self.commit_pending_done().await?;
        }
        Ok(())
    }

    /// Waits until `at`, appends an extend, and waits for its verdict.
    async fn extend_at(
        &self,
        at: Instant,
        task_id: Uuid,
        token: i64,
    ) -> anyhow::Result<ExtendOutcome> {
        tokio::time::sleep_until(at.into()).await;
        let issued_at = Instant::now();
        let extend = Extend {
            task_id,
            worker_id: self.config.worker_id,
            token,
            extended_at_ms: wall_clock_ms(),
            lease_ms: self.config.lease_ms,
        };
        let offset = match self.appender.append(&[extend.into()]).await {
            Ok(offsets) => offsets[0],
            Err(error) => {
                tracing::warn!(worker_id = %self.config.worker_id, %task_id, token, %error, "extend append failed");
                return Ok(ExtendOutcome::NotAppended);
            }
        };
        let verdict = self.own_verdict(offset).await?;
        match verdict.event {
            Event::Extended { expires_at_ms, .. } => {
                self.observer
                    .extended(task_id, token, offset, expires_at_ms);
                Ok(ExtendOutcome::Renewed { issued_at })
            }
            Event::ExtendVoid { reason, .. } => Ok(ExtendOutcome::Void { reason }),
            other => anyhow::bail!(
                "the verdict on extend offset {offset} is not an extend verdict: {other:?}"
            ),
        }
    }

    /// The verdict on this worker's record at `offset`, once its claims follower applied it
    /// (at most [`VERDICT_TIMEOUT_MS`]).
    async fn own_verdict(&self, offset: i64) -> anyhow::Result<OwnVerdict> {
        Ok(self
            .live_view()
            .wait_for_own_verdict(
                self.config.worker_id,
                offset,
                Duration::from_millis(VERDICT_TIMEOUT_MS),
            )
            .await?)
    }

    /// The pending done, if any (it stays pending until an append of it is acknowledged).
    fn pending_done(&self) -> Option<Finished> {
        self.pending_done.lock().expect("pending done lock").clone()
    }

    /// Appends the pending done alone, if there is one, and reads its verdict; true if there
    /// was one.
    async fn commit_pending_done(&self) -> anyhow::Result<bool> {
        let Some(finished) = self.pending_done() else {
            return Ok(false);
        };
        self.commit_done(&finished).await?;
        Ok(true)
    }

    /// Appends the done alone (repeating it if the append fails) and reads its verdict. The done
    /// stops being pending as soon as an append of it is acknowledged, before its verdict is
    /// read: a worker stopped while it waits for that verdict must not append the done again.
    async fn commit_done(&self, finished: &Finished) -> anyhow::Result<()> {
        let worker_id = self.config.worker_id;
        let (task_id, token) = (finished.task_id, finished.token);
        for attempt in 1..=MAX_DONE_ATTEMPTS {
            let offset = match self.appender.append(&[finished.done(worker_id)]).await {
                Ok(offsets) => offsets[0],
                Err(error) => {
                    tracing::warn!(%worker_id, %task_id, token, attempt, %error, "done append failed; repeating it");
                    tokio::time::sleep(append_retry_backoff(attempt)).await;
                    continue;
                }
            };
            *self.pending_done.lock().expect("pending done lock") = None;
            return self.done_verdict(finished, offset).await;
        }
        *self.pending_done.lock().expect("pending done lock") = None;
        self.adoption().given_up(token);
        tracing::warn!(%worker_id, %task_id, token, "gave up appending the done; the lease will lapse");
        Ok(())
    }

    /// Reads the verdict on the done appended at `offset` and acts on it.
    async fn done_verdict(&self, finished: &Finished, offset: i64) -> anyhow::Result<()> {
        let (task_id, token) = (finished.task_id, finished.token);
        self.observer.done_appended(task_id, token, offset);
        let verdict = self.own_verdict(offset).await?;
        match verdict.event {
            Event::DoneAccepted { .. } | Event::DoneRepeated { .. } => {
                self.observer.completed(task_id, token, offset);
            }
            Event::DoneFenced { reason, .. } => {
                self.lease_lost(task_id, token, &format!("done fenced: {reason:?}"));
            }
            other => {
                anyhow::bail!(
                    "the verdict on done offset {offset} is not a done verdict: {other:?}"
                )
            }
        }
        Ok(())
    }

    /// Whether this worker writes heartbeats: a rendezvous picker at protocol level 2 (the only
    /// reader of liveness is the rendezvous pick, so other workers spare the records).
    fn writes_heartbeats(&self) -> bool {
        self.config.pick == Pick::Rendezvous && self.config.protocol.writes_heartbeats()
    }

    /// Milliseconds until the next heartbeat is due, if this worker writes them.
    fn next_heartbeat_in_ms(&self) -> Option<u64> {
        if !self.writes_heartbeats() {
            return None;
        }
        let every = Duration::from_millis(self.config.lease_ms / HEARTBEATS_PER_LEASE);
        let since = self.appender.since_last_append();
        Some(every.saturating_sub(since).as_millis() as u64 + 1)
    }

    /// Appends a heartbeat if this worker writes them and has appended nothing for lease / 2.
    /// Its verdict is not waited for; a failed append is tried again at the next idle look.
    async fn heartbeat_if_due(&self) {
        if !self.heartbeat_overdue() {
            return;
        }
        self.append_heartbeat(self.config.lease_ms).await;
    }

    fn heartbeat_overdue(&self) -> bool {
        self.writes_heartbeats()
            && self.appender.since_last_append()
                >= Duration::from_millis(self.config.lease_ms / HEARTBEATS_PER_LEASE)
    }

    async fn append_heartbeat(&self, lease_ms: u64) {
        let heartbeat = Heartbeat {
            worker_id: self.config.worker_id,
            at_ms: wall_clock_ms(),
            lease_ms,
        };
        if let Err(error) = self.appender.append(&[heartbeat.into()]).await {
            tracing::warn!(worker_id = %self.config.worker_id, %error, "heartbeat append failed");
        }
    }

    /// Hands the lease `token` on `task_id` back, bounded by [`RELEASE_TIMEOUT_MS`]; a release
    /// that fails or is void is logged, and the lease lapses instead.
    async fn release(&self, task_id: Uuid, token: i64) {
        let worker_id = self.config.worker_id;
        let timeout = Duration::from_millis(RELEASE_TIMEOUT_MS);
        let release = Release {
            task_id,
            worker_id,
            token,
            released_at_ms: wall_clock_ms(),
        };
        // This run never works under the token again, released or not.
        self.adoption().given_up(token);
        let judged = tokio::time::timeout(timeout, async {
            let offset = self.appender.append(&[release.into()]).await?[0];
            let verdict = self
                .live_view()
                .wait_for_own_verdict(worker_id, offset, timeout)
                .await?;
            anyhow::Ok(verdict.event)
        })
        .await;
        match judged {
            Ok(Ok(event)) => self.observer.release_judged(task_id, token, &event),
            Ok(Err(error)) => {
                tracing::warn!(%worker_id, %task_id, token, %error, "the release failed; the lease lapses instead");
            }
            Err(_) => {
                tracing::warn!(%worker_id, %task_id, token, "no verdict on the release in time; the lease lapses instead");
            }
        }
    }

    fn lease_lost(&self, task_id: Uuid, token: i64, why: &str) {
        // A lease walked away from is never adopted again (`adoption.rs`).
        self.adoption().given_up(token);
        self.observer.lease_lost(task_id, token, why);
    }

    fn adoption(&self) -> std::sync::MutexGuard<'_, UnacknowledgedClaims> {
        self.unacknowledged_claims
            .lock()
            .expect("unacknowledged claims lock")
    }
}

impl Worker {
    /// The live view, the pool's.
    fn live_view(&self) -> &Arc<LiveView> {
        self.pool.view()
    }
}

impl fmt::Debug for Worker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker")
            .field("config", &self.config)
            .field("view", self.live_view())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // The view stops keeping verdicts for this id; the followers stop with the last member
        // (or the pool handle) gone.
        self.pool.view().leave(self.config.worker_id);
    }
}

/// Clears the worker's current task when the work ends, however it ends (including when the
/// worker's future is dropped at shutdown).
struct CurrentTask<'a> {
    worker: &'a Worker,
}

impl<'a> CurrentTask<'a> {
    fn set(worker: &'a Worker, task_id: Uuid, token: i64) -> Self {
        *worker.current.lock().expect("current task lock") = Some((task_id, token));
        Self { worker }
    }
}

impl Drop for CurrentTask<'_> {
    fn drop(&mut self) {
        *self.worker.current.lock().expect("current task lock") = None;
    }
}

/// Appends to the claims partition, one request per append, and returns the records' offsets.
///
/// Not a batching producer: a claim is worth nothing until the worker knows its offset, and a
/// linger window would only add latency to the claim round trip. The one batch it makes is the
/// worker's own: a pending done and the next claim, appended together.
///
/// A failed append is **not** retried here: after a lost connection nobody knows whether the
/// record was written. The caller decides — a claim is simply abandoned (if it was written and
/// won, the lease lapses and the task is claimed again, or this run adopts it), a done is
/// repeated (a repeat of an accepted done is harmless by the verdict rules).
#[derive(Debug)]
struct Appender {
    /// The claims partition (on booblik, its appends have a connection of their own, reopened
    /// when it breaks).
    log: Arc<dyn PartitionLog>,
    ack: Ack,
    /// When the last append was acknowledged (or the appender was made): heartbeats are due
    /// from it.
    last_append: Mutex<Instant>,
}

impl Appender {
    fn new(log: Arc<dyn PartitionLog>, ack: Ack) -> Self {
        Self {
            log,
            ack,
            last_append: Mutex::new(Instant::now()),
        }
    }

    /// Time since the last acknowledged append.
    fn since_last_append(&self) -> Duration {
        self.last_append.lock().expect("last append lock").elapsed()
    }

    /// Appends `records` as one batch and returns their offsets, in order, once acknowledged.
    async fn append(&self, records: &[ClaimsRecord]) -> Result<Vec<i64>, EngineError> {
        let encoded: Vec<Bytes> = records
            .iter()
            .map(|record| Bytes::from(record.encode()))
            .collect();
        let appended = self.log.append(&encoded, self.ack).await?;
        if appended.offsets.len() != records.len() {
            return Err(EngineError::Broken {
                partition: self.log.name().clone(),
                reason: format!(
                    "an acknowledged append of {} records returned {} offsets",
                    records.len(),
                    appended.offsets.len()
                ),
            });
        }
        *self.last_append.lock().expect("last append lock") = Instant::now();
        Ok(appended.offsets)
    }
}

/// The engine's ack level of a worker's `claim_ack` (a validated config never has NONE: it
/// returns no offset).
fn engine_ack(policy: AckPolicy) -> anyhow::Result<Ack> {
    match policy {
        AckPolicy::Forced => Ok(Ack::Forced),
        AckPolicy::Written => Ok(Ack::Written),
        AckPolicy::None => anyhow::bail!("claim_ack NONE returns no offset"),
    }
}
