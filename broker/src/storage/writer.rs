//! One writer per partition: a dedicated OS thread fed by a bounded queue, doing group commit.
//!
//! File I/O blocks (a `pwrite` can wait for memory, an `fsync` for the disk), so the writer is a
//! plain thread rather than an async task; the async side talks to it through
//! [`WriterQueue`]. Because one thread takes the commands in queue order, records are appended
//! in arrival order and get gap-free offsets.
//!
//! # Bounds
//!
//! The queue is bounded twice, each by a semaphore, and an append needs room in both before it
//! pushes its command (waiting asynchronously, which is the backpressure producers feel):
//!
//! * **count**: `writer_queue_depth` permits, one per batch;
//! * **bytes**: one [`QueueBudget`] of `writer_queue_bytes` permits **shared by every partition
//!   of the broker**, one per byte the batch will take in a segment ([`RecordSet::log_bytes`]).
//!   A batch larger than the whole budget reserves the whole budget, so it waits for an empty
//!   budget and then goes alone instead of waiting forever. So that one busy partition cannot
//!   starve the others, a partition with nothing queued may always admit one batch without
//!   waiting: it takes what the budget has left and its **pass** for the rest (one per
//!   partition, returned with the batch). Memory for queued batches is therefore at most
//!   `writer_queue_bytes` plus one batch per partition.
//!
//! The count alone does not bound memory: a batch may be as large as a frame (8 MiB), so 1024
//! queued batches could hold 8 GiB. That matters most for ack NONE, whose producer is answered
//! as soon as its batch is queued and would otherwise keep sending while the writer stalls. The
//! permits of one batch travel with its command as a [`QueueSlot`], and the writer drops the slot
//! once the batch is handled, returning both. Both semaphores are fair (first come, first
//! served), so a large batch waiting for bytes is not overtaken forever by small ones.
//!
//! # Group commit
//!
//! The writer blocks for one command, then drains whatever else is queued (up to
//! [`MAX_GROUP_COMMANDS`]) and handles them in order: every batch is written and its offsets
//! published at once, WRITTEN batches are answered at once, and FORCED batches wait. After the
//! group, **one** fsync covers all of them and every FORCED waiter is answered. Producers that
//! arrive while that fsync runs form the next group, so the number of fsyncs follows the disk's
//! speed, not the number of producers.
//!
//! An fsync or write failure poisons the partition ([`Poison`]): the waiters of that group and
//! every later append get [`StorageError::Poisoned`]. A full disk met before any record of a
//! batch was written is a refusal instead ([`StorageError::NoSpace`]): that batch fails, the
//! partition takes the next one.
//!
//! # The log's lock
//!
//! The writer does not own the [`PartitionLog`]: it sits behind a mutex ([`SharedLog`]) that the
//! partition's inline append takes too (a small WRITTEN or FORCED batch written on the caller's
//! thread when nothing is queued; `docs/storage.md` § Inline appends). The writer holds the
//! lock from the first command of a group to the end of the group's fsync, and for retention
//! and closing; it never waits for a command while holding it. A FORCED batch written inline
//! that cannot sync on its own thread sends [`Command::Sync`], which joins the next group: the
//! group's fsync covers it, with nothing of its own to write.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use booblik_protocol::probe::Stamp;
use booblik_protocol::{AckPolicy, RecordSet};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};
use tracing::{error, warn};

use super::error::StorageError;
use super::log::{Appended, PartitionLog};

/// A partition's log, shared by its writer thread and the inline append. `None` once the writer
/// has closed it (after its last group): nothing appends any more.
pub(crate) type SharedLog = Arc<Mutex<Option<PartitionLog>>>;

/// Locks `log`, whatever a panic elsewhere left (the log's own state says what is durable).
pub(crate) fn lock_log(log: &SharedLog) -> std::sync::MutexGuard<'_, Option<PartitionLog>> {
    log.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
use super::metrics::PartitionMetrics;
use super::poison::Poison;

/// Most commands handled between two group-commit fsyncs: bounds how long the first FORCED
/// waiter of a group can wait behind the others.
pub(crate) const MAX_GROUP_COMMANDS: usize = 1024;

/// Where the writer sends an append's result.
/// The [`Stamp`] is when the writer answered (the hop probe; zero-sized without it).
pub(crate) type AppendReply = oneshot::Sender<(Result<Appended, StorageError>, Stamp)>;

/// Where the writer says that everything written before a [`Command::Sync`] is durable.
pub(crate) type SyncReply = oneshot::Sender<(Result<(), StorageError>, Stamp)>;

/// What the writer is asked to do.
#[derive(Debug)]
pub(crate) enum Command {
    /// Append a batch; answer per `ack` (no reply for NONE).
    Append {
        records: RecordSet,
        ack: AckPolicy,
        reply: Option<AppendReply>,
        /// Told as soon as the batch is written and its offsets visible to readers (before the
        /// group's fsync); dropped unsent when the append fails. Lets a pipelining session
        /// apply a read after a FORCED append without waiting for that append's fsync.
        written: Option<oneshot::Sender<()>>,
        /// The batch's room in the queue, released when the writer has handled it.
        slot: QueueSlot,
        /// When it was queued (the hop probe).
        queued: Stamp,
    },
    /// Make everything written so far durable with the next group's fsync: a FORCED batch that
    /// was written inline and could not sync on its caller's thread. Takes no place in the
    /// queue (it carries no records).
    Sync { reply: SyncReply },
    /// Apply retention now.
    EnforceRetention {
        reply: oneshot::Sender<Result<usize, StorageError>>,
    },
    /// Finish what is queued, sync, and stop.
    Close,
}

/// The broker-wide byte budget of the writer queues: `writer_queue_bytes` permits shared by every
/// partition (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct QueueBudget {
    bytes: Arc<Semaphore>,
    capacity_bytes: u32,
}

impl QueueBudget {
    pub(crate) fn new(capacity_bytes: u32) -> Self {
        Self {
            bytes: Arc::new(Semaphore::new(capacity_bytes as usize)),
            capacity_bytes,
        }
    }
}

/// One queued batch's room in the queue: a place in the count, its bytes of the shared budget,
/// and maybe its partition's pass. Dropping it returns all.
#[derive(Debug)]
pub(crate) struct QueueSlot {
    place: OwnedSemaphorePermit,
    bytes: OwnedSemaphorePermit,
    /// Bytes admitted on the partition's pass, beyond `bytes`.
    passed_bytes: u64,
    load: Arc<QueueLoad>,
}

impl Drop for QueueSlot {
    fn drop(&mut self) {
        self.load
            .batches
            .fetch_sub(self.place.num_permits(), Ordering::Relaxed);
        self.load.bytes.fetch_sub(
            self.bytes.num_permits() as u64 + self.passed_bytes,
            Ordering::Relaxed,
        );
        if self.passed_bytes > 0 {
            self.load.pass_taken.store(false, Ordering::Release);
        }
    }
}

/// What the queue holds, for stats: batches that got both their place and their bytes.
///
/// Not read off the semaphores, because tokio hands permits to a waiting `acquire_many` as they
/// are released: a batch still waiting for its bytes already holds some of them.
#[derive(Debug, Default)]
struct QueueLoad {
    batches: AtomicUsize,
    bytes: AtomicU64,
    /// A batch of this partition holds the pass.
    pass_taken: AtomicBool,
}

/// The sending side of a partition's writer queue.
#[derive(Debug)]
pub(crate) struct WriterQueue {
    sender: Mutex<Option<mpsc::Sender<Command>>>,
    /// One permit per batch that may be queued.
    places: Arc<Semaphore>,
    /// The broker-wide byte budget.
    budget: QueueBudget,
    load: Arc<QueueLoad>,
}

impl WriterQueue {
    /// A queue of at most `depth` appends whose bytes come from `budget` (see the module docs),
    /// and the receiving end for the writer.
    pub(crate) fn new(depth: usize, budget: QueueBudget) -> (Self, mpsc::Receiver<Command>) {
        let (sender, receiver) = mpsc::channel();
        let queue = Self {
            sender: Mutex::new(Some(sender)),
            places: Arc::new(Semaphore::new(depth)),
            budget,
            load: Arc::default(),
        };
        (queue, receiver)
    }

    /// Waits for room for one append of `log_bytes` bytes (backpressure): a place first, then the
    /// bytes of the shared budget, clamped to the whole budget — or, with nothing of this
    /// partition queued, what the budget has left plus the partition's pass, without waiting.
    /// `Closed` once the queue is closed.
    pub(crate) async fn reserve(&self, log_bytes: usize) -> Result<QueueSlot, StorageError> {
        let place = Arc::clone(&self.places)
            .acquire_owned()
            .await
            .map_err(|_| StorageError::Closed)?;
        let wanted = u32::try_from(log_bytes)
            .unwrap_or(u32::MAX)
            .min(self.budget.capacity_bytes);
        let semaphore = &self.budget.bytes;
        let (bytes, passed_bytes) = match Arc::clone(semaphore).try_acquire_many_owned(wanted) {
            Ok(bytes) => (bytes, 0),
            Err(tokio::sync::TryAcquireError::Closed) => return Err(StorageError::Closed),
            Err(tokio::sync::TryAcquireError::NoPermits) if self.may_pass() => {
                // Whatever the budget has left now (none if a waiter is ahead: the semaphore is
                // fair), the rest on the pass.
                let left = (semaphore.available_permits() as u32).min(wanted);
                let bytes = Arc::clone(semaphore)
                    .try_acquire_many_owned(left)
                    .or_else(|_| Arc::clone(semaphore).try_acquire_many_owned(0))
                    .map_err(|_| StorageError::Closed)?;
                let passed = u64::from(wanted) - bytes.num_permits() as u64;
                if passed == 0 {
                    self.load.pass_taken.store(false, Ordering::Release);
                }
                (bytes, passed)
            }
            Err(tokio::sync::TryAcquireError::NoPermits) => {
                let bytes = Arc::clone(semaphore)
                    .acquire_many_owned(wanted)
                    .await
                    .map_err(|_| StorageError::Closed)?;
                (bytes, 0)
            }
        };
        self.load
            .batches
            .fetch_add(place.num_permits(), Ordering::Relaxed);
        self.load
            .bytes
            .fetch_add(bytes.num_permits() as u64 + passed_bytes, Ordering::Relaxed);
        Ok(QueueSlot {
            place,
            bytes,
            passed_bytes,
            load: Arc::clone(&self.load),
        })
    }

    /// True, and the pass taken, when nothing of this partition is queued and the pass is free.
    fn may_pass(&self) -> bool {
        self.load.bytes.load(Ordering::Acquire) == 0
            && self
                .load
                .pass_taken
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
    }

    /// Hands a command to the writer. `Closed` once the queue is closed.
    pub(crate) fn push(&self, command: Command) -> Result<(), StorageError> {
        let sender = self
            .sender
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match sender.as_ref() {
            Some(sender) => sender.send(command).map_err(|_| StorageError::Closed),
            None => Err(StorageError::Closed),
        }
    }

    /// Queues `Close` behind everything already queued and refuses later commands. False when
    /// the queue was already closed.
    pub(crate) fn close(&self) -> bool {
        let sender = self
            .sender
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        self.places.close();
        match sender {
            Some(sender) => {
                let _ = sender.send(Command::Close);
                true
            }
            None => false,
        }
    }

    /// Appends waiting for (or being handled by) the writer.
    pub(crate) fn queued(&self) -> usize {
        self.load.batches.load(Ordering::Relaxed)
    }

    /// Bytes reserved by those appends (a batch larger than the budget counts as the budget).
    pub(crate) fn queued_bytes(&self) -> u64 {
        self.load.bytes.load(Ordering::Relaxed)
    }
}

/// FORCED appends written in the current group, waiting for its fsync.
#[derive(Debug, Default)]
struct ForcedGroup {
    /// With when each batch was written (the hop probe).
    waiters: Vec<(AppendReply, Appended, Stamp)>,
    /// Inline FORCED batches waiting for the group's fsync ([`Command::Sync`]).
    syncs: Vec<SyncReply>,
}

/// The writer thread's state.
#[derive(Debug)]
pub(crate) struct Writer {
    pub(crate) label: String,
    pub(crate) log: SharedLog,
    pub(crate) commands: mpsc::Receiver<Command>,
    pub(crate) poison: Arc<Poison>,
    pub(crate) metrics: Arc<PartitionMetrics>,
    pub(crate) retention_check_interval: Duration,
}

impl Writer {
    /// Starts the writer thread. It returns the result of the final sync when it stops.
    pub(crate) fn spawn(self) -> std::io::Result<JoinHandle<Result<(), StorageError>>> {
        std::thread::Builder::new()
            .name(format!("writer-{}", self.label))
            .spawn(move || self.run())
    }

    fn run(self) -> Result<(), StorageError> {
        let mut next_retention = Instant::now() + self.retention_check_interval;
        let mut closing = false;
        while !closing {
            let wait = next_retention.saturating_duration_since(Instant::now());
            let first = match self.commands.recv_timeout(wait) {
                Ok(command) => command,
                Err(RecvTimeoutError::Timeout) => {
                    self.retention();
                    next_retention = Instant::now() + self.retention_check_interval;
                    continue;
                }
                // Every sender is gone without a Close: stop the same way.
                Err(RecvTimeoutError::Disconnected) => break,
            };
            let mut guard = lock_log(&self.log);
            let log = guard
                .as_mut()
                .expect("only the writer takes the log out, when it stops");
            let mut group = ForcedGroup::default();
            closing = self.handle(log, first, &mut group);
            let mut handled = 1;
            while !closing && handled < MAX_GROUP_COMMANDS {
                let Ok(command) = self.commands.try_recv() else {
                    break;
                };
                closing = self.handle(log, command, &mut group);
                handled += 1;
            }
            self.commit(log, group);
            drop(guard);
            if Instant::now() >= next_retention {
                self.retention();
                next_retention = Instant::now() + self.retention_check_interval;
            }
        }
        // Waits for an inline append in progress; after this nothing appends.
        let log = lock_log(&self.log).take();
        self.poison.check()?;
        let Some(log) = log else {
            return Ok(());
        };
        log.close()
            .inspect_err(|error| poison_with(&self.poison, &self.label, error))
    }

    /// Handles one command; true for `Close`.
    fn handle(&self, log: &mut PartitionLog, command: Command, group: &mut ForcedGroup) -> bool {
        match command {
            Command::Append {
                records,
                ack,
                reply,
                written,
                slot,
                queued,
            } => {
                let picked = queued.hop("b2 writer thread takes the batch from its queue");
                let result = self.poison.check().and_then(|()| {
                    log.append(&records, ack).inspect_err(|error| {
                        // A refusal is not a failure of the log.
                        if !error.is_refusal() {
                            self.poison_with(error);
                        } else if matches!(error, StorageError::NoSpace { .. }) {
                            self.metrics.refused_for_space();
                        }
                    })
                });
                let written_at = picked.hop("b3 writer: write + publish");
                if result.is_ok() {
                    self.metrics.appended(records.count());
                    if let Some(written) = written {
                        let _ = written.send(());
                    }
                }
                // The batch's memory goes first, then its room in the queue — before the answer,
                // so a producer answered finds the partition idle and may append inline.
                drop(records);
                drop(slot);
                match (ack, result, reply) {
                    (AckPolicy::Forced, Ok(appended), Some(reply)) => {
                        group.waiters.push((reply, appended, written_at));
                    }
                    (_, result, Some(reply)) => {
                        let _ = reply.send((result, Stamp::now()));
                    }
                    (_, Err(error), None) => {
                        warn!(partition = %self.label, %error, "an append with ack NONE failed");
                    }
                    (_, Ok(_), None) => {}
                }
                false
            }
            Command::Sync { reply } => {
                group.syncs.push(reply);
                false
            }
            Command::EnforceRetention { reply } => {
                let _ = reply.send(self.enforce_retention(log));
                false
            }
            Command::Close => true,
        }
    }

    /// One fsync for every FORCED append of the group (and every inline FORCED batch written
    /// before it), then their answers.
    fn commit(&self, log: &mut PartitionLog, group: ForcedGroup) {
        if group.waiters.is_empty() && group.syncs.is_empty() {
            return;
        }
        for (_, _, written_at) in &group.waiters {
            written_at.hop("b4 writer: written -> group's fsync starts");
        }
        let syncing = Stamp::now();
        let synced = self
            .poison
            .check()
            .and_then(|()| log.sync().inspect_err(|error| self.poison_with(error)));
        match synced {
            Ok(()) => {
                let synced_at = syncing.hop("b5 writer: fsync (one per group)");
                let covered = group.waiters.len() + log.take_forced_since_sync();
                if covered > 0 {
                    self.metrics.forced_group(covered);
                }
                for (reply, appended, _) in group.waiters {
                    let _ = reply.send((Ok(appended), synced_at));
                }
                for reply in group.syncs {
                    let _ = reply.send((Ok(()), synced_at));
                }
            }
            Err(error) => {
                // The sync's own error, or the earlier poisoning that prevented it.
                let cause = self.poison.cause().unwrap_or_else(|| error.to_string());
                let poisoned = || StorageError::Poisoned {
                    cause: cause.clone(),
                };
                for (reply, _, _) in group.waiters {
                    let _ = reply.send((Err(poisoned()), Stamp::now()));
                }
                for reply in group.syncs {
                    let _ = reply.send((Err(poisoned()), Stamp::now()));
                }
            }
        }
    }

    fn enforce_retention(&self, log: &mut PartitionLog) -> Result<usize, StorageError> {
        self.poison.check()?;
        log.enforce_retention(SystemTime::now())
            .inspect_err(|error| self.poison_with(error))
    }

    fn retention(&self) {
        if self.poison.is_poisoned() {
            return;
        }
        let mut guard = lock_log(&self.log);
        let Some(log) = guard.as_mut() else {
            return;
        };
        if let Err(error) = self.enforce_retention(log) {
            error!(partition = %self.label, %error, "retention failed");
        }
    }

    fn poison_with(&self, error: &StorageError) {
        poison_with(&self.poison, &self.label, error);
    }
}

/// Poisons with `error` (the first cause wins) and says so once.
pub(crate) fn poison_with(poison: &Poison, label: &str, error: &StorageError) {
    if poison.set(error) {
        error!(
            partition = %label,
            %error,
            "partition poisoned: every later append fails until the broker is restarted"
        );
    }
}
