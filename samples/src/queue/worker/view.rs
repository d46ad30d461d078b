//! The worker's live view of the queue: one [`QueueState`] fed by two followers (both here), and
//! the verdicts on the worker's own records, waiting to be picked up.
//!
//! A view has *members*: the workers it keeps verdicts for. A worker started on its own is the
//! one member of a view of its own; the workers of a [`WorkerPool`](super::WorkerPool) share one
//! view, and with it one pair of followers (`pool.rs` says why). Each member's verdicts are kept
//! apart, by its worker id.
//!
//! # Why the view keeps the worker's own verdicts
//!
//! A worker learns what became of its claim from the event its claims follower produced when it
//! applied the record at the offset the append returned. The follower may well apply the record
//! *before* the append's acknowledgement arrives (records are readable once written; a FORCED
//! acknowledgement waits for the fsync), so the worker cannot register interest first and then
//! wait. Instead the follower keeps every verdict on a record written by this worker
//! (`worker_id` matches) at or after the claims position where the worker started, and the worker
//! takes it out by offset. The worker appends one record at a time, so taking the verdict at
//! offset `x` also drops any older one nobody waits for any more (an extend abandoned because the
//! work finished first, an append whose acknowledgement was lost); a hard limit bounds the rest.
//!
//! # Waking up
//!
//! Every applied batch bumps a [`watch`] counter. Waiters mark the counter seen *before* they look
//! at the state and sleep on `changed()` after: a batch applied in between is never missed, and
//! nobody polls.
//!
//! # The followers
//!
//! A follower reads one partition ([`PartitionLog`], on whichever engine) from its first record
//! with long polls and applies it to the view. A worker runs two — `tasks` and `claims` — each
//! feeding the one [`LiveView`] in log order. Both start at the partition's start: the verdict is
//! a fold over the whole claims log, and a reader that started later would not know the leases
//! granted before its start.
//!
//! Each read waits at the engine (booblik's FETCH v2 long poll, JetStream's pull with an expiry),
//! so an idle partition costs one request per `follow_max_wait_ms`. A failure the engine calls
//! transient (a lost connection, a leader election) is retried from the same offset — a read is
//! safe to repeat — a bounded number of times in a row; anything else — a CRC mismatch, an offset
//! out of range after retention or a broker that lost its tail — stops the follower, and with it
//! the worker: its verdicts would no longer be everyone's.
//!
//! # After a reconnect: is the log still the log we read?
//!
//! A broker *machine* crash can lose records that were written but not fsynced, and hand their
//! offsets to the next records appended. A follower that had applied them asks for the offset
//! after them and gets it — holding other records, with nothing in the answer to say so. Folding
//! those into the verdicts would make this worker judge from a log nobody else has. So, as the
//! events follow consumer does, a follower whose partition reopened its connection
//! ([`PartitionLog::reconnects`] grew: a broker restart, a JetStream client that reconnected to
//! another node) re-reads the last record it applied ([`recheck`](crate::events::recheck)) before
//! it applies the batch that came over that connection, and stops the worker with [`ViewError::LogRewritten`] naming the
//! log if that record is not the one it applied. Only a restart (which replays both logs from
//! their origin) can tell what the worker should believe now.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rand::Rng;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use uuid::Uuid;

use crate::engine::{LogRecord, MAX_READ_RECORDS, PartitionLog, ReadLimits};
use crate::events::recheck::{Applied, Recheck, recheck_log};
use crate::queue::pick::Pick;
use crate::queue::record::{ClaimsRecord, Task};
use crate::queue::state::{Event, LogName, QueueConfig, QueueState};
use crate::support::retry::RETRY_BACKOFF_MS;

/// Verdicts on own records kept for the worker at most; beyond this the oldest are dropped.
/// The worker waits for one record at a time, so more than a handful means nobody is waiting.
pub const MAX_KEPT_OWN_VERDICTS: usize = 1_024;

/// A verdict on one of the worker's own records, and when its follower applied it.
#[derive(Debug, Clone)]
pub(crate) struct OwnVerdict {
    pub(crate) event: Event,
    pub(crate) applied_at: Instant,
}

/// A task the worker may claim, with what it needs to run it.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub(crate) task_id: Uuid,
    pub(crate) payload: Vec<u8>,
    /// `false` only for a rendezvous pick whose task another idle worker ranks first: the
    /// worker defers before claiming it.
    pub(crate) ranked_first: bool,
}

/// Why a worker cannot join a view.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JoinError {
    /// Another member has the same worker id.
    #[error(
        "worker {worker_id} is a member of this pool already: each worker needs an id of its own"
    )]
    Duplicate {
        /// The id.
        worker_id: Uuid,
    },
    /// The view has [`MAX_POOL_WORKERS`](super::MAX_POOL_WORKERS) members.
    #[error("the pool has {members} workers, its maximum")]
    Full {
        /// Members now.
        members: usize,
    },
}

/// Why waiting on the view ended without an answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ViewError {
    /// A follower stopped for good; the view will not move again.
    #[error("a follower stopped: {0}")]
    FollowerStopped(Arc<str>),
    /// The claims follower did not reach the offset in time: the broker or the connection is
    /// unwell, and working without a verdict would be guessing.
    #[error("no verdict on claims offset {offset} within {waited_ms} ms")]
    VerdictTimeout {
        /// The offset waited for.
        offset: i64,
        /// How long.
        waited_ms: u64,
    },
    /// The follower passed the offset without a verdict for this worker: the record there is
    /// not this worker's (or could not be decoded).
    #[error("claims offset {offset} was applied, but it holds no record of this worker")]
    NotOwnRecord {
        /// The offset.
        offset: i64,
    },
    /// After a reconnect, the record the follower of `log` applied last is not in the log any
    /// more as it was read (`found_crc` is `None`: the log now ends before it). The broker lost
    /// records and gave their offsets to others; this worker's verdicts are no longer everyone's.
    #[error(
        "the {log} log was rewritten under the worker: offset {offset} held a record with CRC-32C \
         {expected_crc:#010x} when it was applied, and now holds {found}; restart the worker to \
         replay both logs",
        found = found_crc.map_or("nothing".to_owned(), |crc| format!("one with {crc:#010x}"))
    )]
    LogRewritten {
        /// The partition that changed.
        log: LogName,
        /// The offset re-read.
        offset: i64,
        /// CRC-32C of the record applied there.
        expected_crc: u32,
        /// CRC-32C of the record there now, if any.
        found_crc: Option<u32>,
    },
}

/// One worker's share of a view.
#[derive(Debug, Default)]
struct Member {
    /// Records under the member's id at this claims offset or later are this run's own; records
    /// before it were written by an earlier run with the same id, if any.
    own_from: i64,
    /// Verdicts on own records at `own_from` or later, by offset, until taken.
    verdicts: BTreeMap<i64, OwnVerdict>,
    /// The task the member picked and has not taken a verdict on since: its pool siblings pick
    /// around it (`pool.rs`).
    claiming: Option<Uuid>,
}

struct ViewInner {
    state: QueueState,
    /// Next offset to apply, per partition.
    tasks_next_offset: i64,
    claims_next_offset: i64,
    /// The workers this view keeps verdicts for, at most [`MAX_POOL_WORKERS`](super::MAX_POOL_WORKERS).
    members: HashMap<Uuid, Member>,
    undecodable_records: u64,
    failure: Option<ViewError>,
}

/// The live view. Shared by the followers (writers) and the loops of its members (readers).
pub(crate) struct LiveView {
    inner: Mutex<ViewInner>,
    progress: watch::Sender<u64>,
}

impl fmt::Debug for LiveView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.lock();
        f.debug_struct("LiveView")
            .field("members", &inner.members.len())
            .field("tasks_next_offset", &inner.tasks_next_offset)
            .field("claims_next_offset", &inner.claims_next_offset)
            .finish_non_exhaustive()
    }
}

impl LiveView {
    /// An empty view with no members, whose followers start at `tasks_start` and
    /// `claims_start`.
    pub(crate) fn new(config: QueueConfig, (tasks_start, claims_start): (i64, i64)) -> Self {
        Self {
            inner: Mutex::new(ViewInner {
                state: QueueState::new(config),
                tasks_next_offset: tasks_start,
                claims_next_offset: claims_start,
                members: HashMap::new(),
                undecodable_records: 0,
                failure: None,
            }),
            progress: watch::Sender::new(0),
        }
    }

    /// Makes `worker_id` a member: from now on the view keeps the verdicts on its records at
    /// claims offset `own_from` or later. Call it before the worker appends anything, with
    /// `own_from` read from the claims log's end at that moment: the worker's first record can
    /// only land there or later, and nothing before it is this run's. Refuses an id that is a
    /// member already (two workers under one id would take each other's verdicts) and a view
    /// at [`MAX_POOL_WORKERS`](super::MAX_POOL_WORKERS).
    pub(crate) fn join(&self, worker_id: Uuid, own_from: i64) -> Result<(), JoinError> {
        let mut inner = self.lock();
        if inner.members.len() >= super::MAX_POOL_WORKERS {
            return Err(JoinError::Full {
                members: inner.members.len(),
            });
        }
        if inner.members.contains_key(&worker_id) {
            return Err(JoinError::Duplicate { worker_id });
        }
        inner.members.insert(
            worker_id,
            Member {
                own_from,
                ..Member::default()
            },
        );
        Ok(())
    }

    /// Forgets member `worker_id` and its verdicts (a worker being dropped).
    pub(crate) fn leave(&self, worker_id: Uuid) {
        self.lock().members.remove(&worker_id);
    }

    fn lock(&self) -> MutexGuard<'_, ViewInner> {
        // A panic while holding the lock leaves a state that may be half-applied; nothing sane can
        // continue from it, so the panic propagates.
        self.inner
            .lock()
            .expect("the live view lock is not poisoned")
    }

    /// A receiver of progress notifications (one per applied batch or failure).
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.progress.subscribe()
    }

    fn notify(&self) {
        self.progress.send_modify(|generation| *generation += 1);
    }

    /// Applies a batch of one partition, in order, and wakes the waiters. Undecodable records are
    /// skipped (every reader running this code skips the same ones, so verdicts still agree) and
    /// counted. A record the state machine refuses stops the view: it means the follower broke
    /// the one-pass, in-order rule, and every later verdict would be suspect.
    pub(crate) fn apply(&self, log: LogName, records: &[LogRecord], next_offset: i64) {
        {
            let mut inner = self.lock();
            let inner = &mut *inner;
            // An empty answer that moves nothing (a long poll that timed out) is no progress:
            // waking the waiters for it would make an idle worker's loop spin once per poll.
            let applied_up_to = match log {
                LogName::Tasks => inner.tasks_next_offset,
                LogName::Claims => inner.claims_next_offset,
            };
            if records.is_empty() && next_offset == applied_up_to {
                return;
            }
            for record in records {
                let applied = match log {
                    LogName::Tasks => match Task::decode(&record.payload) {
                        Ok(task) => inner.state.apply_task(record.offset, &task).map(|_| ()),
                        Err(error) => {
                            inner.undecodable_records += 1;
                            tracing::warn!(log = %log, offset = record.offset, %error, "skipping an undecodable record");
                            Ok(())
                        }
                    },
                    LogName::Claims => match ClaimsRecord::decode(&record.payload) {
                        Ok(claims_record) => inner
                            .state
                            .apply_claims_record(record.offset, &claims_record)
                            .map(|event| {
                                // Nobody waits for the verdict on a heartbeat.
                                if let Some(member) =
                                    inner.members.get_mut(&claims_record.worker_id())
                                    && record.offset >= member.own_from
                                    && claims_record.task_id().is_some()
                                {
                                    keep_own_verdict(&mut member.verdicts, record.offset, event);
                                }
                            }),
                        Err(error) => {
                            inner.undecodable_records += 1;
                            tracing::warn!(log = %log, offset = record.offset, %error, "skipping an undecodable record");
                            Ok(())
                        }
                    },
                };
                if let Err(error) = applied {
                    inner.failure = Some(ViewError::FollowerStopped(
                        format!("{log} follower: {error}").into(),
                    ));
                    break;
                }
            }
            if inner.failure.is_none() {
                match log {
                    LogName::Tasks => inner.tasks_next_offset = next_offset,
                    LogName::Claims => inner.claims_next_offset = next_offset,
                }
            }
        }
        self.notify();
    }

    /// Marks the view as stopped for good (the first failure counts) and wakes every waiter.
    pub(crate) fn fail(&self, error: ViewError) {
        self.lock().failure.get_or_insert(error);
        self.notify();
    }

    /// The failure that stopped the view, if any.
    pub(crate) fn failure(&self) -> Option<ViewError> {
        self.lock().failure.clone()
    }

    /// Runs `f` on the queue state (briefly: the followers wait meanwhile).
    pub(crate) fn with_state<R>(&self, f: impl FnOnce(&QueueState) -> R) -> R {
        f(&self.lock().state)
    }

    /// The claims offset from which records under `worker_id` are this run's own: the claims
    /// high watermark when the worker joined (`i64::MAX` for a worker that is not a member:
    /// nothing is its own).
    pub(crate) fn own_from(&self, worker_id: Uuid) -> i64 {
        self.lock()
            .members
            .get(&worker_id)
            .map_or(i64::MAX, |member| member.own_from)
    }

    /// Undecodable records skipped so far.
    pub(crate) fn undecodable_records(&self) -> u64 {
        self.lock().undecodable_records
    }

    /// Waits until both partitions have been applied up to (excluding) the given offsets: the
    /// high watermarks seen at start. Picking before that would judge from a stale prefix.
    pub(crate) async fn wait_caught_up(
        &self,
        tasks_end: i64,
        claims_end: i64,
    ) -> Result<(), ViewError> {
        let mut progress = self.subscribe();
        loop {
            progress.borrow_and_update();
            {
                let inner = self.lock();
                if let Some(error) = &inner.failure {
                    return Err(error.clone());
                }
                if inner.tasks_next_offset >= tasks_end && inner.claims_next_offset >= claims_end {
                    return Ok(());
                }
            }
            // The sender lives as long as the view, which outlives this borrow.
            let _ = progress.changed().await;
        }
    }

    /// Waits for the verdict on member `worker_id`'s own record at `offset` (bounded by
    /// `timeout`). Taking it ends the member's claiming mark: the verdict is now in the state
    /// its siblings pick from.
    pub(crate) async fn wait_for_own_verdict(
        &self,
        worker_id: Uuid,
        offset: i64,
        timeout: Duration,
    ) -> Result<OwnVerdict, ViewError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut progress = self.subscribe();
        loop {
            progress.borrow_and_update();
            {
                let mut inner = self.lock();
                if let Some(member) = inner.members.get_mut(&worker_id)
                    && let Some(verdict) = member.verdicts.remove(&offset)
                {
                    // Older own verdicts are for records nobody waits for any more.
                    member.verdicts = member.verdicts.split_off(&offset);
                    member.claiming = None;
                    return Ok(verdict);
                }
                if let Some(error) = &inner.failure {
                    return Err(error.clone());
                }
                if inner.claims_next_offset > offset {
                    return Err(ViewError::NotOwnRecord { offset });
                }
            }
            if tokio::time::timeout_at(deadline, progress.changed())
                .await
                .is_err()
            {
                return Err(ViewError::VerdictTimeout {
                    offset,
                    waited_ms: timeout.as_millis() as u64,
                });
            }
        }
    }

    /// Chooses a task that is claimable at `now_ms` for member `worker_id`, if there is one, and
    /// marks it as the member's until it takes a verdict: no sibling of the member picks it
    /// meanwhile ([`Pick::choose_around`]). Cheap (an index lookup, see [`QueueState::pick`],
    /// plus one look per sibling's mark): the followers wait while the lock is held.
    pub(crate) fn pick<R: Rng + ?Sized>(
        &self,
        worker_id: Uuid,
        now_ms: u64,
        pick: Pick,
        rng: &mut R,
    ) -> Option<Candidate> {
        let mut inner = self.lock();
        let taken: Vec<Uuid> = inner
            .members
            .iter()
            .filter(|(id, _)| **id != worker_id)
            .filter_map(|(_, member)| member.claiming)
            .collect();
        let candidates = inner.state.candidates(now_ms);
        let (task_id, ranked_first) = match pick {
            Pick::Rendezvous => match inner.state.rendezvous_pick(now_ms, worker_id, rng) {
                Some(ranked) if !taken.contains(&ranked.task_id) => {
                    (ranked.task_id, ranked.ranked_first)
                }
                // A sibling is claiming the task this worker ranks best: any other will do, at
                // once (the sibling, not a stranger, is who it would defer to).
                Some(_) => (Pick::Random.choose_around(&candidates, &taken, rng)?, true),
                None => return None,
            },
            Pick::First | Pick::Random => (pick.choose_around(&candidates, &taken, rng)?, true),
        };
        let payload = inner
            .state
            .task(task_id)
            .and_then(|task| task.submission.as_ref())
            .map(|submission| submission.payload.clone())?;
        // Only a task the member claims at once is marked: one it defers on is another worker's
        // to take, and that worker may be a sibling.
        if let Some(member) = inner.members.get_mut(&worker_id) {
            member.claiming = ranked_first.then_some(task_id);
        }
        Some(Candidate {
            task_id,
            payload,
            ranked_first,
        })
    }

    /// Ends member `worker_id`'s claiming mark without a verdict (its claim append failed).
    pub(crate) fn stop_claiming(&self, worker_id: Uuid) {
        if let Some(member) = self.lock().members.get_mut(&worker_id) {
            member.claiming = None;
        }
    }

    /// The earliest moment after `now_ms` at which a current lease on a submitted, unfinished
    /// task lapses: when such a task becomes claimable without any new record.
    pub(crate) fn next_lapse_after(&self, now_ms: u64) -> Option<u64> {
        self.lock().state.next_lapse_after(now_ms)
    }
}

fn keep_own_verdict(own_verdicts: &mut BTreeMap<i64, OwnVerdict>, offset: i64, event: Event) {
    own_verdicts.insert(
        offset,
        OwnVerdict {
            event,
            applied_at: Instant::now(),
        },
    );
    while own_verdicts.len() > MAX_KEPT_OWN_VERDICTS {
        own_verdicts.pop_first();
    }
}

/// A read-only handle on a worker's live [`QueueState`], e.g. for a work function that wants to
/// see the queue. It is only as fresh as the worker's followers: a worker paused past its lease
/// wakes up with a view that still says its token is current, so it is no place to check a lease
/// before an effect — that is the receiver's job ([`ResultSink`](super::ResultSink)).
#[derive(Debug, Clone)]
pub struct StateView {
    view: Arc<LiveView>,
}

impl StateView {
    pub(crate) fn new(view: Arc<LiveView>) -> Self {
        Self { view }
    }

    /// Runs `f` on the state as the worker's followers have applied it so far. Keep `f` short:
    /// the followers wait while it runs.
    pub fn with_state<R>(&self, f: impl FnOnce(&QueueState) -> R) -> R {
        self.view.with_state(f)
    }
}

/// Connection failures in a row after which a follower gives up (about 10 s of outage, at
/// [`RETRY_BACKOFF_MS`] between attempts).
pub const MAX_CONSECUTIVE_FOLLOW_FAILURES: u32 = 20;

/// How a follower reads: at most `wait` per read (the worker's `follow_max_wait_ms`, capped at
/// the engine's [`MAX_READ_WAIT`](crate::engine::MAX_READ_WAIT)), and as many records per read
/// as the engine gives.
pub(crate) fn follow_limits(wait: Duration) -> ReadLimits {
    ReadLimits {
        max_records: MAX_READ_RECORDS,
        wait: wait.min(crate::engine::MAX_READ_WAIT),
        ..ReadLimits::default()
    }
}

/// Spawns the follower of `log`, reading `partition` from `from`; it runs until it fails for good
/// or is aborted.
pub(crate) fn spawn_follower(
    partition: Arc<dyn PartitionLog>,
    from: i64,
    limits: ReadLimits,
    log: LogName,
    view: Arc<LiveView>,
) -> JoinHandle<()> {
    tokio::spawn(follow_into(partition, from, limits, log, view))
}

async fn follow_into(
    partition: Arc<dyn PartitionLog>,
    mut position: i64,
    limits: ReadLimits,
    log: LogName,
    view: Arc<LiveView>,
) {
    let mut failures = 0u32;
    // The last record applied, and the partition's reconnect count when it was read: a batch
    // read over a newer connection may come from a broker that lost records.
    let mut applied: Option<Applied> = None;
    let mut reconnects_seen = partition.reconnects();
    loop {
        match partition.read(position, limits).await {
            Ok(batch) => {
                failures = 0;
                if partition.reconnects() != reconnects_seen {
                    reconnects_seen = partition.reconnects();
                    if let Some(applied) = applied
                        && let Err(error) = log_still_holds(log, applied, partition.as_ref()).await
                    {
                        tracing::error!(%log, %error, "follower stopped");
                        view.fail(error);
                        return;
                    }
                }
                if let Some(last) = batch.records.last() {
                    applied = Some(Applied::of_log_record(last));
                }
                view.apply(log, &batch.records, batch.next_offset);
                position = batch.next_offset;
                if view.failure().is_some() {
                    return;
                }
            }
            Err(error) if error.is_transient() && failures < MAX_CONSECUTIVE_FOLLOW_FAILURES => {
                failures += 1;
                tracing::warn!(%log, %error, failures, position, "follower cannot read; retrying");
                tokio::time::sleep(Duration::from_millis(RETRY_BACKOFF_MS)).await;
            }
            Err(error) => {
                tracing::error!(%log, %error, position, "follower stopped");
                view.fail(ViewError::FollowerStopped(
                    format!("{log} follower at offset {position}: {error}").into(),
                ));
                return;
            }
        }
    }
}

/// Re-reads the last applied record of `log` (retrying a transient failure as the follower does):
/// `Ok` if it is still there as it was read, or retention has dropped it since.
async fn log_still_holds(
    log: LogName,
    applied: Applied,
    partition: &dyn PartitionLog,
) -> Result<(), ViewError> {
    let mut failures = 0u32;
    loop {
        match recheck_log(partition, applied).await {
            Ok(Recheck::Same | Recheck::Retained) => return Ok(()),
            Ok(Recheck::Rewritten {
                offset,
                expected_crc,
                found_crc,
            }) => {
                return Err(ViewError::LogRewritten {
                    log,
                    offset,
                    expected_crc,
                    found_crc,
                });
            }
            Err(error) if error.is_transient() && failures < MAX_CONSECUTIVE_FOLLOW_FAILURES => {
                failures += 1;
                tracing::warn!(%log, %error, offset = applied.offset, "cannot re-check the last applied record yet; retrying");
                tokio::time::sleep(Duration::from_millis(RETRY_BACKOFF_MS)).await;
            }
            Err(error) => {
                return Err(ViewError::FollowerStopped(
                    format!(
                        "{log} follower, re-checking offset {}: {error}",
                        applied.offset
                    )
                    .into(),
                ));
            }
        }
    }
}
