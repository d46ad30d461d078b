//! One partition: the handle the server appends to and reads from.
//!
//! A [`Partition`] ties together the reader-visible [`LogView`], the queue into the partition's
//! writer thread, the log both share behind a mutex, and the poisoned flag. Appends are checked
//! here first (too large, poisoned) so a refusal never costs a trip through the queue; then they
//! wait for room in the queue, in batches and in bytes, which is the backpressure producers feel
//! when the disk falls behind.
//!
//! # Inline appends
//!
//! A WRITTEN or FORCED batch that finds the partition idle is appended on the caller's thread
//! instead: no trip to the writer thread and back, each of which costs a thread wake-up. Idle
//! means, checked again under the log's lock: nothing of this partition is queued (so the batch
//! cannot overtake a queued one: a connection's requests are applied in order), the lock is
//! free (`try_lock`), the partition is neither closed nor poisoned, and the batch takes nothing
//! but a write (at most [`INLINE_APPEND_MAX_BYTES`], no roll, no block reservation). And the
//! caller is a task of a multi-thread tokio runtime, the only place where the FORCED fsync below
//! may block its thread (`block_in_place`). Anything else is queued as before.
//!
//! A WRITTEN batch appended inline is answered at once. A FORCED one is answered once a
//! completed fsync covers it: when its answer is awaited (for a session: when the answers
//! before it are written, after it applied every request it had already received, so batches
//! pipelined behind it are written before that fsync and share it), the caller syncs on its own
//! thread — unless an fsync covered the batch meanwhile (the shared durable mark), or the writer
//! has work queued or holds the lock, in which case a [`Command::Sync`] joins the writer's next
//! group commit. `docs/storage.md` § Inline appends.
//!
//! The caller's thread is a runtime worker, and an fsync blocks it. Inside `block_in_place` the
//! runtime hands the thread's core to another thread for the duration and takes it back after:
//! two thread switches per fsync, which cost a lone FORCED PRODUCE 12–23 % of its round trip
//! on a 2-vCPU VM (`docs/benchmarks.md` § An inline fsync that keeps its core). So one runtime
//! thread at a time ([`MAX_RUNTIME_THREADS_IN_FSYNC`], process-wide, and only in a runtime with
//! another worker) keeps its core and blocks outright; any other inline fsync meanwhile goes
//! through `block_in_place`. While it blocks, the other workers steal its queued tasks, but not
//! the one task in its LIFO slot (often a long poll the append just woke), which waits for the
//! fsync. Not while a MAPPED seal runs: that sync first waits for the seal, up to a whole
//! segment's fsync, so it goes through `block_in_place`
//! (`an_inline_forced_sync_hands_its_core_off_while_a_seal_runs`).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use booblik_protocol::probe::Stamp;
use booblik_protocol::{AckPolicy, RecordSet, TopicName};
use tokio::sync::oneshot;

use super::config::StorageConfig;
use super::durability::Durability;
use super::error::{IoContext, StorageError};
use super::hooks::TestHooks;
use super::log::{Appended, LogSettings, PartitionLog};
use super::log_view::{FetchPosition, LogView};
use super::metrics::{PartitionMetrics, PartitionStats};
use super::poison::Poison;
use super::read_slice::ReadSlice;
use super::retention::RetentionPolicy;
use super::writer::{Command, QueueBudget, SharedLog, Writer, WriterQueue, poison_with};

/// Largest batch (its bytes in a segment) appended inline on the caller's thread; a larger one
/// goes to the writer thread, so a runtime thread copies at most this much per append.
pub const INLINE_APPEND_MAX_BYTES: usize = 64 * 1024;

/// One partition of one topic: an append-only log of records with gap-free offsets.
pub struct Partition {
    topic: TopicName,
    id: i32,
    max_payload_bytes: usize,
    view: Arc<LogView>,
    queue: WriterQueue,
    /// The log, shared with the writer thread: the inline append takes it with `try_lock`.
    log: SharedLog,
    /// Bytes of the log a completed fsync covers (raised by the log under its lock).
    durable_log_bytes: Arc<AtomicU64>,
    /// Inline appends being written now (at most one: they hold the lock); counted in
    /// `PartitionStats::queued_appends`.
    inline_in_progress: AtomicUsize,
    poison: Arc<Poison>,
    metrics: Arc<PartitionMetrics>,
    hooks: TestHooks,
    closed: AtomicBool,
    writer: Mutex<Option<JoinHandle<Result<(), StorageError>>>>,
}

impl std::fmt::Debug for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partition")
            .field("topic", &self.topic)
            .field("id", &self.id)
            .field("log_start_offset", &self.log_start_offset())
            .field("high_watermark", &self.high_watermark())
            .finish_non_exhaustive()
    }
}

impl Partition {
    /// Opens (recovering) the partition's directory `<data_dir>/<topic>-<id>/`, creating it if
    /// needed, and starts its writer thread.
    pub(crate) fn open(
        topic: &TopicName,
        id: i32,
        config: &StorageConfig,
        budget: &QueueBudget,
    ) -> Result<Partition, StorageError> {
        let label = format!("{topic}-{id}");
        let dir = config.data_dir.join(&label);
        let metrics = Arc::new(PartitionMetrics::new(topic.as_str(), id));
        let durability = Durability::new(Arc::clone(&config.io), Arc::clone(&metrics));
        create_dir_durably(&dir, &config.data_dir, &durability)?;
        let settings = LogSettings {
            write_mode: config.write_mode,
            segment_bytes: config.segment_bytes,
            index_interval_bytes: config.index_interval_bytes,
            retention: RetentionPolicy {
                retention_bytes: config.retention_bytes,
                retention_ms: config.retention_ms,
            },
        };
        let log = PartitionLog::open(dir, settings, durability)?;
        let view = Arc::clone(log.view());
        let durable_log_bytes = Arc::clone(log.durable_log_bytes());
        let log: SharedLog = Arc::new(Mutex::new(Some(log)));
        let (queue, commands) = WriterQueue::new(config.writer_queue_depth, budget.clone());
        let poison = Arc::new(Poison::default());
        let writer = Writer {
            label: label.clone(),
            log: Arc::clone(&log),
            commands,
            poison: Arc::clone(&poison),
            metrics: Arc::clone(&metrics),
            retention_check_interval: Duration::from_millis(config.retention_check_interval_ms),
        }
        .spawn()
        .context(|| format!("starting the writer thread of {label}"))?;
        Ok(Partition {
            topic: topic.clone(),
            id,
            max_payload_bytes: settings.max_payload_bytes(),
            view,
            queue,
            log,
            durable_log_bytes,
            inline_in_progress: AtomicUsize::new(0),
            poison,
            metrics,
            hooks: TestHooks::default(),
            closed: AtomicBool::new(false),
            writer: Mutex::new(Some(writer)),
        })
    }

    /// The topic.
    pub fn topic(&self) -> &TopicName {
        &self.topic
    }

    /// The partition id.
    pub fn id(&self) -> i32 {
        self.id
    }

    /// Largest record payload accepted (`segment_bytes - 8`).
    pub fn max_record_bytes(&self) -> usize {
        self.max_payload_bytes
    }

    /// Appends `records`, which get consecutive offsets in arrival order.
    ///
    /// Refuses at once, without queueing, a batch holding a record larger than an empty segment
    /// can take ([`StorageError::RecordTooLarge`]) and any batch once the partition is poisoned.
    /// Then waits for room in the writer queue (backpressure): a place among
    /// `writer_queue_depth` batches and `records.log_bytes()` of `writer_queue_bytes` (the whole
    /// budget for a larger batch, which then goes alone). A batch whose last record would pass
    /// the largest offset is refused by the writer ([`StorageError::OffsetOverflow`]), whole, and
    /// so is one that finds the disk full before any of its records is written
    /// ([`StorageError::NoSpace`]); neither poisons the partition.
    /// The answer depends on `ack`:
    ///
    /// * `None`: `Ok(None)` as soon as the batch is queued; it is still appended, in order;
    /// * `Written`: after the bytes are written and the offsets visible to readers;
    /// * `Forced`: after an fsync covering the batch (shared with every FORCED batch of its group).
    ///
    /// A WRITTEN or FORCED batch that finds the partition idle is appended on the calling
    /// thread instead of queued (see the module docs, § Inline appends); the answers are the
    /// same. Dropping the future after the batch was queued does not withdraw it.
    pub async fn append(
        &self,
        records: RecordSet,
        ack: AckPolicy,
    ) -> Result<Option<Appended>, StorageError> {
        self.admit(&records)?;
        if ack != AckPolicy::None
            && let Some(answer) = self.append_inline(&records, ack)
        {
            return answer.wait(self).await.map(Some);
        }
        match self.queue_append(records, ack, None).await? {
            None => Ok(None),
            Some(answer) => answer.wait(self).await.map(Some),
        }
    }

    /// [`Partition::append`] in two steps, for a session that pipelines: returns once the batch
    /// is queued or appended inline (its place among the partition's appends, and so its
    /// offsets' order, is then fixed), with what to wait on. `Ok(None)` for ack NONE. [`Written`]
    /// tells when the batch is written and visible to readers (WRITTEN and FORCED alike: before a
    /// FORCED batch's fsync; at once for a batch appended inline); [`AppendAnswer`] carries the
    /// answer `append` would give (ready at once for a WRITTEN batch appended inline; a FORCED
    /// one appended inline syncs when awaited, see [`AppendAnswer::wait`]). Dropping either does
    /// not withdraw the batch.
    pub async fn append_queued(
        &self,
        records: RecordSet,
        ack: AckPolicy,
    ) -> Result<Option<(Written, AppendAnswer)>, StorageError> {
        self.admit(&records)?;
        if ack == AckPolicy::None {
            return self.queue_append(records, ack, None).await.map(|_| None);
        }
        if let Some(answer) = self.append_inline(&records, ack) {
            return Ok(Some((Written(None), answer)));
        }
        let (written, written_rx) = oneshot::channel();
        let answer = self.queue_append(records, ack, Some(written)).await?;
        Ok(answer.map(|answer| (Written(Some(written_rx)), answer)))
    }

    /// Refuses at once what the writer would refuse anyway: a record too large for an empty
    /// segment, any batch of a poisoned partition.
    fn admit(&self, records: &RecordSet) -> Result<(), StorageError> {
        let largest = records.max_payload_len();
        if largest > self.max_payload_bytes {
            return Err(StorageError::RecordTooLarge {
                size: largest,
                max: self.max_payload_bytes,
            });
        }
        self.poison.check()
    }

    /// The inline append (module docs): `None` when the batch must be queued instead.
    fn append_inline(&self, records: &RecordSet, ack: AckPolicy) -> Option<AppendAnswer> {
        debug_assert_ne!(ack, AckPolicy::None);
        if records.log_bytes() > INLINE_APPEND_MAX_BYTES
            || self.queue.queued() != 0
            || !may_block_in_place()
        {
            return None;
        }
        // A lock poisoned by a panic (the writer's) is not idle: the queued path reports it.
        let Ok(mut guard) = self.log.try_lock() else {
            return None;
        };
        // Again under the lock: the writer drops a batch's slot only once it is written, and
        // takes this lock for every group, so nothing queued is ahead of this batch.
        if self.queue.queued() != 0 || self.closed.load(Ordering::SeqCst) {
            return None;
        }
        let log = guard.as_mut()?;
        if !log.takes_without_roll(records) {
            return None;
        }
        let in_progress = InProgress::enter(&self.inline_in_progress);
        // What the writer does with a batch (`Writer::handle`), on this thread.
        let result = self.poison.check().and_then(|()| {
            log.append(records, ack).inspect_err(|error| {
                if !error.is_refusal() {
                    poison_with(&self.poison, &self.label(), error);
                } else if matches!(error, StorageError::NoSpace { .. }) {
                    self.metrics.refused_for_space();
                }
            })
        });
        drop(in_progress);
        let written_at = Stamp::now();
        if result.is_ok() {
            self.metrics.appended(records.count());
            self.metrics.appended_inline();
        }
        Some(AppendAnswer(match (ack, result) {
            (AckPolicy::Forced, Ok(appended)) => {
                log.note_forced_inline();
                Answer::Unsynced {
                    appended,
                    log_bytes_end: log.log_bytes_end(),
                    written_at,
                }
            }
            (_, result) => Answer::Ready(result),
        }))
    }

    /// Waits until a completed fsync covers the log up to `log_bytes_end` (an inline FORCED
    /// batch's end): at once if one did, else an fsync on this thread when the partition is
    /// idle (keeping the core, or inside `block_in_place`: module docs), else the writer's next
    /// group commit ([`Command::Sync`]).
    async fn sync_covering(
        &self,
        log_bytes_end: u64,
        written_at: Stamp,
    ) -> Result<(), StorageError> {
        if self.covered(log_bytes_end, written_at) {
            return Ok(());
        }
        if self.queue.queued() == 0
            && may_block_in_place()
            && let Ok(guard) = self.log.try_lock()
        {
            // One runtime thread at a time keeps its core through the fsync (module docs), but
            // not through a seal: that sync waits for a whole segment's fsync.
            let sealing = guard.as_ref().is_some_and(PartitionLog::seal_in_flight);
            if !sealing && let Some(_in_fsync) = RuntimeThreadInFsync::try_enter() {
                return self.sync_inline(guard, log_bytes_end, written_at);
            }
            return tokio::task::block_in_place(move || {
                self.sync_inline(guard, log_bytes_end, written_at)
            });
        }
        let (reply, answer) = oneshot::channel();
        let queued = Stamp::now();
        if self.queue.push(Command::Sync { reply }).is_ok()
            && let Ok((result, synced)) = answer.await
        {
            synced.hop("b6s writer synced -> inline FORCED answer");
            queued.hop("b2s inline FORCED: sync sent to the writer -> answer");
            return result;
        }
        // The writer stopped; closing synced everything unless it failed.
        if self.is_durable(log_bytes_end) {
            Ok(())
        } else {
            Err(self.stopped())
        }
    }

    /// The fsync of an inline FORCED batch on the caller's thread, under the log's lock: what
    /// the writer's group commit does (`Writer::commit`), for every batch written so far.
    fn sync_inline(
        &self,
        mut guard: std::sync::MutexGuard<'_, Option<PartitionLog>>,
        log_bytes_end: u64,
        written_at: Stamp,
    ) -> Result<(), StorageError> {
        if self.covered(log_bytes_end, written_at) {
            return Ok(());
        }
        let Some(log) = guard.as_mut() else {
            // Closed: the writer's final sync failed, or the partition is poisoned.
            return Err(self.stopped());
        };
        let syncing = written_at.hop("b4i inline FORCED: written -> its fsync starts");
        let synced = self.poison.check().and_then(|()| {
            log.sync()
                .inspect_err(|error| poison_with(&self.poison, &self.label(), error))
        });
        match synced {
            Ok(()) => {
                syncing.hop("b5i caller's thread: inline fsync");
                self.metrics.synced_inline();
                self.metrics
                    .forced_group(log.take_forced_since_sync().max(1));
                debug_assert!(self.is_durable(log_bytes_end));
                Ok(())
            }
            Err(error) => Err(StorageError::Poisoned {
                cause: self.poison.cause().unwrap_or_else(|| error.to_string()),
            }),
        }
    }

    /// [`Partition::is_durable`], stamping the hop probe when it is.
    fn covered(&self, log_bytes_end: u64, written_at: Stamp) -> bool {
        let durable = self.is_durable(log_bytes_end);
        if durable {
            written_at.hop("b5c inline FORCED: already covered by another fsync");
        }
        durable
    }

    /// True once a completed fsync covers the log up to `log_bytes_end`.
    fn is_durable(&self, log_bytes_end: u64) -> bool {
        self.durable_log_bytes.load(Ordering::Acquire) >= log_bytes_end
    }

    /// `topic-id`, as the writer names the partition in its logs.
    fn label(&self) -> String {
        format!("{}-{}", self.topic, self.id)
    }

    /// Queues a batch that [`Partition::admit`] let through (every caller admits it first).
    async fn queue_append(
        &self,
        records: RecordSet,
        ack: AckPolicy,
        written: Option<oneshot::Sender<()>>,
    ) -> Result<Option<AppendAnswer>, StorageError> {
        let slot = self.queue.reserve(records.log_bytes()).await?;
        let (reply, answer) = match ack {
            AckPolicy::None => (None, None),
            AckPolicy::Written | AckPolicy::Forced => {
                let (reply, answer) = oneshot::channel();
                (Some(reply), Some(answer))
            }
        };
        self.queue.push(Command::Append {
            records,
            ack,
            reply,
            written,
            slot,
            queued: Stamp::now(),
        })?;
        Ok(answer.map(|answer| AppendAnswer(Answer::Queued(answer))))
    }

    /// First offset still in the log (moves forward with retention).
    pub fn log_start_offset(&self) -> i64 {
        self.view.log_start_offset()
    }

    /// Offset the next record will get; every offset below it is written and readable.
    pub fn high_watermark(&self) -> i64 {
        self.view.high_watermark()
    }

    /// Finds where the record at `fetch_offset` starts (a walk of at most one index interval
    /// from the sparse index entry before it), waiting for the disk if it must: call it off the
    /// runtime threads. The [`FetchPosition`] pins nothing. [`StorageError::OffsetOutOfRange`]
    /// outside `[log_start_offset, high_watermark]`.
    pub fn locate(&self, fetch_offset: i64) -> Result<FetchPosition, StorageError> {
        Ok(self
            .view
            .locate(fetch_offset, false)?
            .expect("a lookup that may wait for the disk always ends"))
    }

    /// [`Partition::locate`] for a thread that must not wait for the disk: `Ok(None)` when the
    /// walk needs bytes the page cache does not hold — then call [`Partition::locate`] where
    /// waiting is fine.
    pub fn locate_cached(&self, fetch_offset: i64) -> Result<Option<FetchPosition>, StorageError> {
        self.view.locate(fetch_offset, true)
    }

    /// The raw bytes from a located record: `min(max_bytes, rest of that segment)`, possibly
    /// ending mid-record, never crossing a segment boundary; empty at the high watermark. No
    /// lookup (a binary search of the segment list). The slice pins its segment until dropped.
    /// `None` when `at` no longer leads to a record — retention dropped its segment, or `at` was
    /// the end of the log and the log rolled since — and the FETCH must locate again. The
    /// slice's bytes are not read; see [`ReadSlice::is_cached`].
    pub fn slice_at(&self, at: &FetchPosition, max_bytes: u32) -> Option<ReadSlice> {
        self.view.slice_at(at, max_bytes)
    }

    /// Waits until at least `max(min_bytes, 1)` bytes of records exist past the located record
    /// `from`, or until `deadline`: the FETCH v2 long poll. Woken by the writer publishing a new
    /// log end, never by polling. Compares byte counts only: it holds no segment and does no
    /// lookup while it waits, so it never delays retention and never reads the disk.
    pub async fn wait_for_bytes(
        &self,
        from: &FetchPosition,
        min_bytes: u64,
        deadline: tokio::time::Instant,
    ) {
        let wanted = min_bytes.max(1);
        let mut ends = self.view.subscribe();
        let mut waited = false;
        loop {
            let end = *ends.borrow_and_update();
            if end.log_bytes.saturating_sub(from.log_bytes()) >= wanted {
                if waited {
                    end.published.hop("f1 log end published -> long poll woken");
                }
                return;
            }
            waited = true;
            match tokio::time::timeout_at(deadline, ends.changed()).await {
                Ok(Ok(())) => {}
                // Deadline, or the log is gone.
                Ok(Err(_)) | Err(_) => return,
            }
        }
    }

    /// The raw bytes from the record at `fetch_offset`: [`Partition::locate`], then
    /// [`Partition::slice_at`]. Empty at the high watermark;
    /// [`StorageError::OffsetOutOfRange`] outside `[log_start_offset, high_watermark]`. Waits
    /// for the disk if the lookup must (for tests and tools; the server locates through its
    /// bounded cold-read dispatcher). The slice pins its segment until dropped.
    pub fn read(&self, fetch_offset: i64, max_bytes: u32) -> Result<ReadSlice, StorageError> {
        self.view.read(fetch_offset, max_bytes)
    }

    /// Applies the retention policy now (it also runs every `retention_check_interval_ms`).
    /// Returns the number of segments dropped.
    pub async fn enforce_retention(&self) -> Result<usize, StorageError> {
        let (reply, answer) = oneshot::channel();
        self.queue.push(Command::EnforceRetention { reply })?;
        answer.await.map_err(|_| self.stopped())?
    }

    /// Counters and shape of the partition, cheap to read.
    pub fn stats(&self) -> PartitionStats {
        PartitionStats {
            fsyncs: self.metrics.fsyncs(),
            forced_groups: self.metrics.forced_groups(),
            appended_records: self.metrics.appended_records(),
            no_space_refusals: self.metrics.no_space_refusals(),
            inline_appends: self.metrics.inline_appends(),
            inline_syncs: self.metrics.inline_syncs(),
            rolls: self.metrics.rolls(),
            longest_roll_micros: self.metrics.longest_roll_micros(),
            seals: self.metrics.seals(),
            longest_seal_micros: self.metrics.longest_seal_micros(),
            segments: self.view.segment_count(),
            index_entries: self.view.index_entries(),
            queued_appends: self.queue.queued() + self.inline_in_progress.load(Ordering::Relaxed),
            queued_bytes: self.queue.queued_bytes(),
            log_start_offset: self.view.log_start_offset(),
            high_watermark: self.view.high_watermark(),
            poisoned: self.poison.is_poisoned(),
            recovered_end: self.metrics.recovered_end(),
        }
    }

    /// Blocking: lets the writer finish everything queued (and an inline append in progress),
    /// syncs and stops it. Later appends fail with [`StorageError::Closed`]. Idempotent;
    /// reports a poisoned partition as an error.
    pub fn close(&self) -> Result<(), StorageError> {
        match self.begin_close() {
            Some(writer) => writer.join().unwrap_or_else(|_| {
                Err(StorageError::Poisoned {
                    cause: format!("the writer thread of {}-{} panicked", self.topic, self.id),
                })
            }),
            None => self.poison.check(),
        }
    }

    /// Non-blocking: queues the writer's stop behind everything queued (later appends fail with
    /// [`StorageError::Closed`]) and hands over the writer thread to join, unless it was taken
    /// already.
    pub(crate) fn begin_close(&self) -> Option<JoinHandle<Result<(), StorageError>>> {
        self.closed.store(true, Ordering::SeqCst);
        self.queue.close();
        self.writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// True when an append now would find the partition idle: nothing queued and the log's lock
    /// free (the writer thread between groups). For tests of the inline append, which must
    /// know that the writer has let go of the log after an earlier batch.
    #[doc(hidden)]
    pub fn is_idle(&self) -> bool {
        self.queue.queued() == 0 && self.log.try_lock().is_ok()
    }

    /// The cold-read gate for tests; see [`TestHooks`]. (Write-path faults are injected through
    /// [`StorageConfig::io`].)
    #[doc(hidden)]
    pub fn test_hooks(&self) -> &TestHooks {
        &self.hooks
    }

    /// Why an append got no answer: closed, poisoned, or a writer that died.
    fn stopped(&self) -> StorageError {
        if let Err(poisoned) = self.poison.check() {
            return poisoned;
        }
        if self.closed.load(Ordering::SeqCst) {
            return StorageError::Closed;
        }
        StorageError::Poisoned {
            cause: format!("the writer thread of {}-{} stopped", self.topic, self.id),
        }
    }
}

impl Drop for Partition {
    /// Closes a partition nobody closed. Joining the writer waits for its final fsync, so on a
    /// runtime thread (where that would hold up every task on it) the join moves to a thread of
    /// its own.
    fn drop(&mut self) {
        let Some(writer) = self.begin_close() else {
            return;
        };
        let label = format!("{}-{}", self.topic, self.id);
        let join = move || match writer.join() {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::warn!(partition = %label, %error, "closing partition on drop failed");
            }
            Err(_) => tracing::warn!(partition = %label, "the writer thread panicked"),
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            drop(
                std::thread::Builder::new()
                    .name("partition-close".into())
                    .spawn(join),
            );
        } else {
            join();
        }
    }
}

/// Counts an inline append as in progress while it lives.
struct InProgress<'a>(&'a AtomicUsize);

impl<'a> InProgress<'a> {
    fn enter(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Self(count)
    }
}

impl Drop for InProgress<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// True when the current thread runs a task of a multi-thread tokio runtime: the one place
/// where `tokio::task::block_in_place` is allowed (it panics on a current-thread runtime, and
/// in a `block_on` that is not the runtime's own). The inline append is taken only there.
fn may_block_in_place() -> bool {
    tokio::task::try_id().is_some()
        && tokio::runtime::Handle::try_current().is_ok_and(|handle| {
            handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
        })
}

/// Runtime threads blocked in an inline fsync that kept their core, process-wide.
static RUNTIME_THREADS_IN_FSYNC: AtomicUsize = AtomicUsize::new(0);

/// How many runtime threads may block in an inline fsync at once without handing their core
/// to another thread (`block_in_place` does that hand-off, which costs two thread switches
/// per fsync). One: whatever else the blocked thread would have run waits for the fsync, so
/// the rest of the runtime must stay free for it, and a runtime with a single worker thread
/// never blocks its worker (module docs).
pub const MAX_RUNTIME_THREADS_IN_FSYNC: usize = 1;

/// A runtime thread's turn to fsync without handing its core off; gives the turn back when
/// dropped.
struct RuntimeThreadInFsync(());

impl RuntimeThreadInFsync {
    /// The turn, if no other runtime thread holds it and the current runtime has a worker
    /// thread besides this one.
    fn try_enter() -> Option<Self> {
        let workers = tokio::runtime::Handle::try_current()
            .map_or(0, |handle| handle.metrics().num_workers());
        if workers < 2 {
            return None;
        }
        RUNTIME_THREADS_IN_FSYNC
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |blocked| {
                (blocked < MAX_RUNTIME_THREADS_IN_FSYNC).then_some(blocked + 1)
            })
            .ok()
            .map(|_| Self(()))
    }
}

impl Drop for RuntimeThreadInFsync {
    fn drop(&mut self) {
        RUNTIME_THREADS_IN_FSYNC.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Tells when a queued batch is written and its offsets visible to readers; see
/// [`Partition::append_queued`]. Done from the start for a batch appended inline.
#[derive(Debug)]
pub struct Written(Option<oneshot::Receiver<()>>);

impl Written {
    /// Returns once the batch is written, or once its append failed (its [`AppendAnswer`] then
    /// carries the error).
    pub async fn wait(self) {
        if let Some(written) = self.0 {
            let _ = written.await;
        }
    }

    /// True once [`Written::wait`] would return at once.
    pub fn is_done(&mut self) -> bool {
        match &mut self.0 {
            None => true,
            Some(written) => {
                !matches!(written.try_recv(), Err(oneshot::error::TryRecvError::Empty))
            }
        }
    }
}

/// The answer to a queued or inline append; see [`Partition::append_queued`].
#[derive(Debug)]
pub struct AppendAnswer(Answer);

#[derive(Debug)]
enum Answer {
    /// Queued: the writer sends it.
    Queued(oneshot::Receiver<(Result<Appended, StorageError>, Stamp)>),
    /// Appended inline: known (WRITTEN, or any failure).
    Ready(Result<Appended, StorageError>),
    /// A FORCED batch appended inline, not yet known to be covered by an fsync.
    Unsynced {
        appended: Appended,
        /// The batch's end in the log's bytes: the fsync must reach it.
        log_bytes_end: u64,
        /// When it was written (the hop probe).
        written_at: Stamp,
    },
}

impl AppendAnswer {
    /// Waits for what the append's ack asks (written, or covered by an fsync) and returns what
    /// [`Partition::append`] would. `partition` is the one the batch was appended to: it names
    /// the reason when the writer stopped without answering.
    ///
    /// For a FORCED batch appended inline this is where the fsync happens, unless another one
    /// covered the batch meanwhile: on this thread, inside `block_in_place`, when the
    /// partition is idle, else in the writer's next group commit.
    pub async fn wait(self, partition: &Partition) -> Result<Appended, StorageError> {
        match self.0 {
            Answer::Queued(answer) => match answer.await {
                Ok((result, answered)) => {
                    answered.hop("b6 writer answered -> session task has the answer");
                    result
                }
                Err(_) => Err(partition.stopped()),
            },
            Answer::Ready(result) => result,
            Answer::Unsynced {
                appended,
                log_bytes_end,
                written_at,
            } => partition
                .sync_covering(log_bytes_end, written_at)
                .await
                .map(|()| appended),
        }
    }

    /// True when the batch was appended inline, on the caller's thread.
    pub fn was_inline(&self) -> bool {
        !matches!(self.0, Answer::Queued(_))
    }

    /// True when the answer is known already (appended inline with ack WRITTEN, or failed):
    /// [`AppendAnswer::wait`] returns it at once.
    pub fn is_known(&self) -> bool {
        matches!(self.0, Answer::Ready(_))
    }

    /// True when [`AppendAnswer::wait`] may block its thread for an fsync: a FORCED batch
    /// appended inline that no fsync covers yet. A session writes the answers before it first.
    pub fn may_block(&self, partition: &Partition) -> bool {
        match &self.0 {
            Answer::Unsynced { log_bytes_end, .. } => !partition.is_durable(*log_bytes_end),
            Answer::Queued(_) | Answer::Ready(_) => false,
        }
    }
}

/// Creates `dir` if missing and makes its name durable in `parent`.
fn create_dir_durably(
    dir: &Path,
    parent: &Path,
    durability: &Durability,
) -> Result<(), StorageError> {
    if dir.is_dir() {
        return Ok(());
    }
    durability
        .io()
        .create_dir_all(dir)
        .context(|| format!("creating {}", dir.display()))?;
    durability.sync_dir(parent)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// Other tests of this process fsync inline too, and may hold the turn for a moment.
    fn take_the_turn() -> RuntimeThreadInFsync {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(turn) = RuntimeThreadInFsync::try_enter() {
                return turn;
            }
            assert!(Instant::now() < deadline, "the turn was never free");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn only_one_runtime_thread_at_a_time_fsyncs_without_handing_its_core_off() {
        let turn = take_the_turn();
        assert!(
            RuntimeThreadInFsync::try_enter().is_none(),
            "a second runtime thread would block in an fsync too"
        );
        drop(turn);
        drop(take_the_turn());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_runtime_with_one_worker_thread_never_blocks_it_in_an_fsync() {
        for _ in 0..100 {
            assert!(RuntimeThreadInFsync::try_enter().is_none());
        }
    }

    /// A FORCED batch written inline right after a roll waits for the previous segment's seal
    /// (up to a whole segment's fsync): the runtime thread that waits must hand its core off,
    /// not keep it as it may for an ordinary fsync.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_inline_forced_sync_hands_its_core_off_while_a_seal_runs() {
        use crate::storage::config::WriteMode;
        use crate::storage::test_io::SimIo;
        use booblik_protocol::{AckPolicy, RecordSet, TopicName};
        let dir = tempfile::tempdir().unwrap();
        let sim = Arc::new(SimIo::new());
        let config = StorageConfig {
            data_dir: dir.path().to_path_buf(),
            segment_bytes: 64 * 1024,
            write_mode: WriteMode::Mapped,
            io: Arc::clone(&sim) as _,
            ..StorageConfig::default()
        };
        let budget = QueueBudget::new(u32::try_from(config.writer_queue_bytes).unwrap_or(u32::MAX));
        let topic = TopicName::new("events").unwrap();
        let partition = Partition::open(&topic, 0, &config, &budget).unwrap();
        let records = |n: usize| RecordSet::from_payloads((0..n).map(|_| vec![7u8; 1000])).unwrap();
        for _ in 0..13 {
            partition
                .append(records(5), AckPolicy::Written)
                .await
                .unwrap();
        }
        let full = dir
            .path()
            .join("events-0")
            .join(crate::storage::segment::segment_file_name(0));
        let (held_tx, held_rx) = std::sync::mpsc::channel::<()>();
        let (waiting_tx, waiting_rx) = std::sync::mpsc::channel::<()>();
        let held_sim = Arc::clone(&sim);
        // Holds the full segment's fsync for 400 ms once the FORCED batch waits, and reports
        // how many runtime threads were then in an fsync keeping their core.
        let holder = std::thread::spawn(move || {
            let stall = held_sim.stall_fsyncs_of(&full);
            held_tx.send(()).unwrap();
            waiting_rx.recv().unwrap();
            std::thread::sleep(Duration::from_millis(400));
            let keeping_their_core = RUNTIME_THREADS_IN_FSYNC.load(Ordering::SeqCst);
            drop(stall);
            keeping_their_core
        });
        held_rx.recv().unwrap();
        // Rolls (on the writer: an inline append never rolls); the seal of segment 0 is held.
        partition
            .append(records(1), AckPolicy::Written)
            .await
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !partition.is_idle() {
            assert!(Instant::now() < deadline, "the writer did not go idle");
            tokio::task::yield_now().await;
        }
        let partition = Arc::new(partition);
        let forced = Arc::clone(&partition);
        let waited = tokio::spawn(async move {
            let (_written, answer) = forced
                .append_queued(records(1), AckPolicy::Forced)
                .await
                .unwrap()
                .unwrap();
            assert!(
                answer.was_inline(),
                "the FORCED batch was not appended inline"
            );
            waiting_tx.send(()).unwrap();
            let started = Instant::now();
            answer.wait(&forced).await.unwrap();
            started.elapsed()
        })
        .await
        .unwrap();
        let keeping_their_core = holder.join().unwrap();
        assert!(
            waited >= Duration::from_millis(350),
            "the FORCED answer came after {waited:?}, before the seal it must wait for"
        );
        assert_eq!(
            keeping_their_core, 0,
            "a runtime thread kept its core while it waited for the seal"
        );
        partition.close().unwrap();
    }
}
