//! One writer per partition: a dedicated OS thread fed by a bounded queue, doing group commit.
//!
//! File I/O blocks (a `pwrite` can wait for memory, an `fsync` for the disk), so the writer is a
//! plain thread rather than an async task; the async side talks to it through
//! [`WriterQueue`]. The queue is bounded by a semaphore of `writer_queue_depth` permits: an
//! append first acquires a permit (asynchronously, which is the backpressure on producers), then
//! pushes its command; the writer releases the permit once the command is handled. Because one
//! thread takes the commands in queue order, records are appended in arrival order and get
//! gap-free offsets.
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
//! every later append get [`StorageError::Poisoned`].

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use booblik_protocol::{AckPolicy, RecordSet};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};
use tracing::{error, warn};

use super::error::StorageError;
use super::hooks::TestHooks;
use super::log::{Appended, PartitionLog};
use super::metrics::PartitionMetrics;
use super::poison::Poison;

/// Most commands handled between two group-commit fsyncs: bounds how long the first FORCED
/// waiter of a group can wait behind the others.
pub(crate) const MAX_GROUP_COMMANDS: usize = 1024;

/// Where the writer sends an append's result.
pub(crate) type AppendReply = oneshot::Sender<Result<Appended, StorageError>>;

/// What the writer is asked to do.
#[derive(Debug)]
pub(crate) enum Command {
    /// Append a batch; answer per `ack` (no reply for NONE).
    Append {
        records: RecordSet,
        ack: AckPolicy,
        reply: Option<AppendReply>,
        /// The queue slot, released when the writer has handled the batch.
        permit: OwnedSemaphorePermit,
    },
    /// Apply retention now.
    EnforceRetention {
        reply: oneshot::Sender<Result<usize, StorageError>>,
    },
    /// Finish what is queued, sync, and stop.
    Close,
}

/// The sending side of a partition's writer queue.
#[derive(Debug)]
pub(crate) struct WriterQueue {
    sender: Mutex<Option<mpsc::Sender<Command>>>,
    room: Arc<Semaphore>,
    depth: usize,
}

impl WriterQueue {
    /// A queue of `depth` appends, and the receiving end for the writer.
    pub(crate) fn new(depth: usize) -> (Self, mpsc::Receiver<Command>) {
        let (sender, receiver) = mpsc::channel();
        let queue = Self {
            sender: Mutex::new(Some(sender)),
            room: Arc::new(Semaphore::new(depth)),
            depth,
        };
        (queue, receiver)
    }

    /// Waits for room for one append (backpressure). `Closed` once the queue is closed.
    pub(crate) async fn reserve(&self) -> Result<OwnedSemaphorePermit, StorageError> {
        Arc::clone(&self.room)
            .acquire_owned()
            .await
            .map_err(|_| StorageError::Closed)
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
        self.room.close();
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
        self.depth.saturating_sub(self.room.available_permits())
    }
}

/// FORCED appends written in the current group, waiting for its fsync.
#[derive(Debug, Default)]
struct ForcedGroup {
    waiters: Vec<(AppendReply, Appended)>,
}

/// The writer thread's state.
#[derive(Debug)]
pub(crate) struct Writer {
    pub(crate) label: String,
    pub(crate) log: PartitionLog,
    pub(crate) commands: mpsc::Receiver<Command>,
    pub(crate) poison: Arc<Poison>,
    pub(crate) metrics: Arc<PartitionMetrics>,
    pub(crate) hooks: Arc<TestHooks>,
    pub(crate) retention_check_interval: Duration,
}

impl Writer {
    /// Starts the writer thread. It returns the result of the final sync when it stops.
    pub(crate) fn spawn(self) -> std::io::Result<JoinHandle<Result<(), StorageError>>> {
        std::thread::Builder::new()
            .name(format!("writer-{}", self.label))
            .spawn(move || self.run())
    }

    fn run(mut self) -> Result<(), StorageError> {
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
            self.hooks.pass_writer_gate();
            let mut group = ForcedGroup::default();
            closing = self.handle(first, &mut group);
            let mut handled = 1;
            while !closing && handled < MAX_GROUP_COMMANDS {
                let Ok(command) = self.commands.try_recv() else {
                    break;
                };
                closing = self.handle(command, &mut group);
                handled += 1;
            }
            self.commit(group);
            if Instant::now() >= next_retention {
                self.retention();
                next_retention = Instant::now() + self.retention_check_interval;
            }
        }
        self.poison.check()?;
        let Self {
            label, log, poison, ..
        } = self;
        log.close()
            .inspect_err(|error| poison_with(&poison, &label, error))
    }

    /// Handles one command; true for `Close`.
    fn handle(&mut self, command: Command, group: &mut ForcedGroup) -> bool {
        match command {
            Command::Append {
                records,
                ack,
                reply,
                permit,
            } => {
                let result = self.poison.check().and_then(|()| {
                    self.log.append(&records).inspect_err(|error| {
                        // A refusal is not a failure of the log.
                        if !matches!(error, StorageError::RecordTooLarge { .. }) {
                            self.poison_with(error);
                        }
                    })
                });
                if result.is_ok() {
                    self.metrics.appended(records.count());
                }
                match (ack, result, reply) {
                    (AckPolicy::Forced, Ok(appended), Some(reply)) => {
                        group.waiters.push((reply, appended));
                    }
                    (_, result, Some(reply)) => {
                        let _ = reply.send(result);
                    }
                    (_, Err(error), None) => {
                        warn!(partition = %self.label, %error, "an append with ack NONE failed");
                    }
                    (_, Ok(_), None) => {}
                }
                drop(permit);
                false
            }
            Command::EnforceRetention { reply } => {
                let _ = reply.send(self.enforce_retention());
                false
            }
            Command::Close => true,
        }
    }

    /// One fsync for every FORCED append of the group, then their answers.
    fn commit(&mut self, group: ForcedGroup) {
        if group.waiters.is_empty() {
            return;
        }
        let synced = self
            .poison
            .check()
            .and_then(|()| self.log.sync().inspect_err(|error| self.poison_with(error)));
        match synced {
            Ok(()) => {
                self.metrics.forced_group(group.waiters.len());
                for (reply, appended) in group.waiters {
                    let _ = reply.send(Ok(appended));
                }
            }
            Err(error) => {
                // The sync's own error, or the earlier poisoning that prevented it.
                let cause = self.poison.cause().unwrap_or_else(|| error.to_string());
                for (reply, _) in group.waiters {
                    let _ = reply.send(Err(StorageError::Poisoned {
                        cause: cause.clone(),
                    }));
                }
            }
        }
    }

    fn enforce_retention(&mut self) -> Result<usize, StorageError> {
        self.poison.check()?;
        self.log
            .enforce_retention(SystemTime::now())
            .inspect_err(|error| self.poison_with(error))
    }

    fn retention(&mut self) {
        if self.poison.is_poisoned() {
            return;
        }
        if let Err(error) = self.enforce_retention() {
            error!(partition = %self.label, %error, "retention failed");
        }
    }

    fn poison_with(&self, error: &StorageError) {
        poison_with(&self.poison, &self.label, error);
    }
}

fn poison_with(poison: &Poison, label: &str, error: &StorageError) {
    if poison.set(error) {
        error!(
            partition = %label,
            %error,
            "partition poisoned: every later append fails until the broker is restarted"
        );
    }
}
