//! The worker: runs the claims-and-leases protocol against a broker.
//!
//! ```text
//! start:  follow `tasks` and `claims` from Earliest (two followers, one QueueState)
//! run:    wait until both are applied up to the high watermarks seen at start
//! loop:   pick a claimable task (Pick::Random by default)
//!           none  → wait for the followers to apply something, or for the next lease to
//!                   lapse (never a busy loop)
//!         append Claim (ack FORCED)           → offset o: the token, should it win
//!         wait until the claims follower has applied o → the verdict on o
//!           lost  → loop
//!           won   → work; every lease/3 append Extend(token) and wait for its verdict
//!                     void → lease lost: abandon the work
//!                     no renewal confirmed by the local deadline → lease lost: abandon it
//!                   append Done(token, result) and wait for its verdict
//! ```
//!
//! # Why claims are FORCED by default
//!
//! The broker makes a record readable once it is written, before it is durable. A verdict is a
//! function of the prefix of the claims log up to the claim. If a worker acted on a verdict
//! derived from records that a broker crash then loses, the next appends would reuse those
//! offsets for different records: the worker's token would name someone else's claim, and two
//! workers could hold the same task with the same token. A FORCED acknowledgement means an
//! fsync covered the claim and therefore the whole prefix before it — exactly the records the
//! verdict depends on — so the worker acts on a verdict only after its append is acknowledged.
//! WRITTEN is available for measurement (`claim_ack`), not as a safe choice.
//!
//! # Files
//!
//! | file | concept |
//! |---|---|
//! | `config.rs` | [`WorkerConfig`] and its validation |
//! | `view.rs` | the live [`QueueState`] fed by the followers; own verdicts by offset |
//! | `follower.rs` | one partition from Earliest with long polls, into the view |
//! | `appender.rs` | one record per PRODUCE to the claims partition, returning its offset |
//! | `claim.rs` | the claim round trip: append, wait for the verdict |
//! | `lease.rs` | holding a lease: work, extends, the done |
//! | `work.rs` | the work function ([`WorkFn`]), simulated by default |
//! | `event.rs`, `stats.rs` | [`WorkerEvent`]s and [`WorkerStats`] for observers |
//! | `sink.rs` | [`ResultSink`]: a fencing sink for effects |
//! | `submit.rs`, `logs.rs` | enqueueing a task; reading both logs for the verifier |
//! | `cli.rs` | plumbing for the `queue-*` binaries |

mod appender;
mod claim;
pub mod cli;
mod config;
mod event;
mod follower;
mod lease;
mod logs;
mod sink;
mod stats;
mod submit;
mod view;
mod work;

pub use crate::support::clock::wall_clock_ms;
pub use claim::MAX_UNACKNOWLEDGED_CLAIMS;
pub use cli::DEFAULT_CONNECT_WAIT_MS;
pub use config::{
    DEFAULT_FOLLOW_MAX_WAIT_MS, DEFAULT_LEASE_MS, DEFAULT_WORK_MS, EXTENDS_PER_LEASE,
    MAX_FOLLOW_MAX_WAIT_MS, MAX_LEASE_MS, MIN_EXTENDS_PER_LEASE, WorkerConfig, WorkerConfigError,
};
pub use event::WorkerEvent;
pub use follower::MAX_CONSECUTIVE_FOLLOW_FAILURES;
pub use lease::{LEASE_SAFETY_MARGIN_PERCENT, MAX_DONE_ATTEMPTS, local_lease_deadline};
pub use logs::{read_logs, read_raw_logs};
pub use sink::{Committed, MAX_SINK_TASKS, Refused, ResultSink};
pub use stats::WorkerStats;
pub use submit::{submit_task, submit_task_with_ack};
pub use view::{MAX_KEPT_OWN_VERDICTS, StateView, ViewError};
pub use work::{Assignment, WorkFn, result_of, simulated_work};

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use booblik_client::{Client, ConsumerConfig, StartPosition, Topic, TopicName};
use rand::SeedableRng;
use rand::rngs::StdRng;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use uuid::Uuid;

use crate::queue::state::{LogName, QueueState};
use appender::Appender;
use stats::StatsCells;
use view::LiveView;

/// Longest wait for the verdict on one of the worker's own records. A follower that cannot get
/// past the worker's offset in this time means the broker or the connection is unwell: the
/// worker stops rather than work without a verdict.
pub const VERDICT_TIMEOUT_MS: u64 = 30_000;
/// Longest idle wait between two looks at the claimable set when neither log moves and no
/// known lease is about to lapse. A safety net only: the waits that matter are event-driven.
pub const MAX_IDLE_WAIT_MS: u64 = 5_000;
/// Pause after a failed append before the worker tries again.
pub const APPEND_RETRY_BACKOFF_MS: u64 = 100;
/// Failed claim appends in a row after which the worker stops.
pub const MAX_CONSECUTIVE_APPEND_FAILURES: u32 = 50;
/// Events waiting for the receiver of [`Worker::events`], at most; beyond this new events are
/// dropped and counted in [`WorkerStats::events_dropped`]. A won task makes five events, so this
/// holds the steps of hundreds of tasks: an observer that reads at all never loses one.
pub const MAX_QUEUED_EVENTS: usize = 4_096;

/// A worker: two followers feeding a live view of the queue, and the claim/work loop.
///
/// Start it with [`Worker::start`], take its [`events`](Self::events) if you want them, then
/// [`run`](Self::run) it until a shutdown future resolves. Dropping the worker stops its
/// followers. Each worker opens connections of its own (two followers, one appender) from the
/// [`Client`] it is given.
pub struct Worker {
    config: WorkerConfig,
    view: Arc<LiveView>,
    appender: Appender,
    work: WorkFn,
    stats: StatsCells,
    current: Mutex<Option<(Uuid, i64)>>,
    /// Claims whose append failed (fate unknown): see `claim.rs`.
    unacknowledged_claims: Mutex<claim::UnacknowledgedClaims>,
    events: Mutex<EventSink>,
    /// High watermarks of `tasks` and `claims` at start: `run` catches up to them first.
    start_offsets: (i64, i64),
    followers: Vec<JoinHandle<()>>,
    running: AtomicBool,
}

/// Where events go: nowhere until [`Worker::events`] is called.
#[derive(Debug, Default)]
struct EventSink {
    taken: bool,
    sender: Option<mpsc::Sender<WorkerEvent>>,
}

impl fmt::Debug for Worker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker")
            .field("config", &self.config)
            .field("view", &self.view)
            .field("stats", &self.stats.snapshot())
            .finish_non_exhaustive()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        for follower in &self.followers {
            follower.abort();
        }
    }
}

impl Worker {
    /// Validates `config`, checks both topics (one partition each), and starts the two
    /// followers from Earliest. The worker does simulated work ([`simulated_work`]).
    pub async fn start(client: Client, config: WorkerConfig) -> anyhow::Result<Worker> {
        let work = simulated_work(config.work_ms);
        Self::start_with_work(client, config, work).await
    }

    /// [`start`](Self::start) with a work function of your own.
    pub async fn start_with_work(
        client: Client,
        config: WorkerConfig,
        work: WorkFn,
    ) -> anyhow::Result<Worker> {
        config.validate()?;
        let tasks = single_partition_topic(&client, &config.tasks_topic).await?;
        let claims = single_partition_topic(&client, &config.claims_topic).await?;
        let tasks_end = tasks.high_watermark(0).unwrap_or(0);
        let claims_end = claims.high_watermark(0).unwrap_or(0);
        let view = Arc::new(LiveView::new(config.queue, config.worker_id, claims_end));
        let consumer_config = ConsumerConfig {
            max_wait_ms: i32::try_from(config.follow_max_wait_ms)
                .context("follow_max_wait_ms is out of range")?,
            ..ConsumerConfig::default()
        };
        let mut followers = Vec::with_capacity(2);
        for (topic, log) in [
            (&config.tasks_topic, LogName::Tasks),
            (&config.claims_topic, LogName::Claims),
        ] {
            let consumer = client
                .consumer(topic, 0, StartPosition::Earliest, consumer_config.clone())
                .await
                .with_context(|| format!("cannot follow {topic}"))?;
            followers.push(follower::spawn(consumer.follow(), log, Arc::clone(&view)));
        }
        let appender = Appender::new(client, claims.name().clone(), config.claim_ack);
        tracing::info!(
            worker_id = %config.worker_id,
            tasks_end,
            claims_end,
            lease_ms = config.lease_ms,
            pick = ?config.pick,
            claim_ack = config.claim_ack.name(),
            "worker started"
        );
        Ok(Worker {
            config,
            view,
            appender,
            work,
            stats: StatsCells::default(),
            current: Mutex::new(None),
            unacknowledged_claims: Mutex::new(claim::UnacknowledgedClaims::default()),
            events: Mutex::new(EventSink::default()),
            start_offsets: (tasks_end, claims_end),
            followers,
            running: AtomicBool::new(false),
        })
    }

    /// The event stream. The first call creates it and returns the receiver; later calls return
    /// `None`. Events before the first call are not kept; events are dropped once the receiver
    /// is dropped, and while [`MAX_QUEUED_EVENTS`] are unread (counted in
    /// [`WorkerStats::events_dropped`]): the worker never waits for an observer.
    pub fn events(&mut self) -> Option<mpsc::Receiver<WorkerEvent>> {
        let mut sink = self.events.lock().expect("events lock");
        if sink.taken {
            return None;
        }
        let (sender, receiver) = mpsc::channel(MAX_QUEUED_EVENTS);
        sink.taken = true;
        sink.sender = Some(sender);
        Some(receiver)
    }

    /// A snapshot of the worker's counters.
    pub fn stats(&self) -> WorkerStats {
        self.stats.snapshot()
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
        self.view.undecodable_records()
    }

    /// A read-only handle on the worker's live queue state.
    pub fn view(&self) -> StateView {
        StateView::new(Arc::clone(&self.view))
    }

    /// Catches up with both logs, then claims and works until `shutdown` resolves (→ the final
    /// stats) or the worker cannot go on (→ the error: a follower stopped, no verdict in
    /// [`VERDICT_TIMEOUT_MS`], appends failing [`MAX_CONSECUTIVE_APPEND_FAILURES`] times).
    ///
    /// At shutdown, work in progress is dropped without a done: its lease lapses and another
    /// worker takes the task over (at-least-once). Takes `&self` so that callers can watch
    /// [`stats`](Self::stats) and [`current_task`](Self::current_task) while it runs; running
    /// one worker twice at once is refused.
    pub async fn run(&self, shutdown: impl Future<Output = ()>) -> anyhow::Result<WorkerStats> {
        anyhow::ensure!(
            !self.running.swap(true, Ordering::SeqCst),
            "worker {} is already running",
            self.config.worker_id
        );
        let outcome = tokio::select! {
            outcome = self.serve() => outcome,
            () = shutdown => Ok(()),
        };
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
        self.view.wait_caught_up(tasks_end, claims_end).await?;
        tracing::info!(
            worker_id = %self.config.worker_id,
            tasks_end,
            claims_end,
            unfinished = self.view.with_state(QueueState::unfinished_count),
            "caught up with both logs"
        );
        let mut rng = StdRng::from_os_rng();
        let mut progress = self.view.subscribe();
        let mut append_failures = 0u32;
        loop {
            progress.borrow_and_update();
            if let Some(reason) = self.view.failure() {
                return Err(ViewError::FollowerStopped(reason).into());
            }
            let now_ms = wall_clock_ms();
            let Some(candidate) = self.view.pick(now_ms, self.config.pick, &mut rng) else {
                StatsCells::bump(&self.stats.idle_waits);
                let wait_ms = self
                    .view
                    .next_lapse_after(now_ms)
                    .map_or(MAX_IDLE_WAIT_MS, |lapse_ms| lapse_ms - now_ms + 1)
                    .min(MAX_IDLE_WAIT_MS);
                tokio::select! {
                    _ = progress.changed() => {}
                    () = tokio::time::sleep(Duration::from_millis(wait_ms)) => {}
                }
                continue;
            };
            match self.claim(candidate).await? {
                claim::Attempt::Appended => append_failures = 0,
                claim::Attempt::NotAppended => {
                    append_failures += 1;
                    anyhow::ensure!(
                        append_failures < MAX_CONSECUTIVE_APPEND_FAILURES,
                        "{append_failures} claim appends failed in a row"
                    );
                    tokio::time::sleep(Duration::from_millis(APPEND_RETRY_BACKOFF_MS)).await;
                }
            }
        }
    }

    fn emit(&self, event: WorkerEvent) {
        let mut sink = self.events.lock().expect("events lock");
        if let Some(sender) = &sink.sender
            && !offer(sender, event, &self.stats.events_dropped)
        {
            sink.sender = None;
        }
    }
}

/// Hands `event` to the observer without waiting: if [`MAX_QUEUED_EVENTS`] are unread it is
/// dropped and counted in `dropped`. Returns `false` once the receiver is gone.
fn offer(sender: &mpsc::Sender<WorkerEvent>, event: WorkerEvent, dropped: &AtomicU64) -> bool {
    match sender.try_send(event) {
        Ok(()) => true,
        Err(mpsc::error::TrySendError::Full(_)) => {
            StatsCells::bump(dropped);
            true
        }
        Err(mpsc::error::TrySendError::Closed(_)) => false,
    }
}

/// METADATA for `name`, which must have exactly one partition: the protocol needs one total
/// order per log.
async fn single_partition_topic(client: &Client, name: &str) -> anyhow::Result<Topic> {
    TopicName::new(name)?;
    let topic = client
        .topic(name)
        .await
        .with_context(|| format!("cannot read the metadata of topic {name}"))?;
    anyhow::ensure!(
        topic.partition_count() == 1,
        "topic {name} has {} partitions; the task queue needs exactly one (one total order)",
        topic.partition_count()
    );
    Ok(topic)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(offset: i64) -> WorkerEvent {
        WorkerEvent::ClaimAppended {
            task_id: Uuid::nil(),
            offset,
        }
    }

    #[test]
    fn a_full_event_queue_drops_and_counts_instead_of_growing() {
        let (sender, mut receiver) = mpsc::channel(2);
        let dropped = AtomicU64::new(0);
        for offset in 0..5 {
            assert!(offer(&sender, event(offset), &dropped));
        }
        assert_eq!(dropped.load(Ordering::Relaxed), 3);
        assert_eq!(receiver.try_recv().ok(), Some(event(0)));
        assert_eq!(receiver.try_recv().ok(), Some(event(1)));
        assert!(receiver.try_recv().is_err());
        drop(receiver);
        assert!(
            !offer(&sender, event(5), &dropped),
            "a gone receiver is noticed"
        );
    }
}
