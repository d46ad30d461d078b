//! One partition: the handle the server appends to and reads from.
//!
//! A [`Partition`] ties together the reader-visible [`LogView`], the queue into the partition's
//! writer thread, and the poisoned flag. Appends are checked here first (too large, poisoned)
//! so a refusal never costs a trip through the queue; then they wait for room in the queue, in
//! batches and in bytes, which is the backpressure producers feel when the disk falls behind.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
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
use super::writer::{Command, QueueBudget, Writer, WriterQueue};

/// One partition of one topic: an append-only log of records with gap-free offsets.
pub struct Partition {
    topic: TopicName,
    id: i32,
    max_payload_bytes: usize,
    view: Arc<LogView>,
    queue: WriterQueue,
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
        let (queue, commands) = WriterQueue::new(config.writer_queue_depth, budget.clone());
        let poison = Arc::new(Poison::default());
        let writer = Writer {
            label: label.clone(),
            log,
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
    /// Dropping the future after the batch was queued does not withdraw it.
    pub async fn append(
        &self,
        records: RecordSet,
        ack: AckPolicy,
    ) -> Result<Option<Appended>, StorageError> {
        match self.queue_append(records, ack, None).await? {
            None => Ok(None),
            Some(answer) => answer.wait(self).await.map(Some),
        }
    }

    /// [`Partition::append`] in two steps, for a session that pipelines: returns once the batch
    /// is queued (its place among the partition's appends, and so its offsets' order, is then
    /// fixed), with what to wait on. `Ok(None)` for ack NONE. [`Written`] tells when the batch
    /// is written and visible to readers (WRITTEN and FORCED alike: before a FORCED batch's
    /// fsync); [`AppendAnswer`] carries the answer `append` would give. Dropping either does not
    /// withdraw the batch.
    pub async fn append_queued(
        &self,
        records: RecordSet,
        ack: AckPolicy,
    ) -> Result<Option<(Written, AppendAnswer)>, StorageError> {
        if ack == AckPolicy::None {
            return self.queue_append(records, ack, None).await.map(|_| None);
        }
        let (written, written_rx) = oneshot::channel();
        let answer = self.queue_append(records, ack, Some(written)).await?;
        Ok(answer.map(|answer| (Written(written_rx), answer)))
    }

    async fn queue_append(
        &self,
        records: RecordSet,
        ack: AckPolicy,
        written: Option<oneshot::Sender<()>>,
    ) -> Result<Option<AppendAnswer>, StorageError> {
        let largest = records.max_payload_len();
        if largest > self.max_payload_bytes {
            return Err(StorageError::RecordTooLarge {
                size: largest,
                max: self.max_payload_bytes,
            });
        }
        self.poison.check()?;
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
        Ok(answer.map(AppendAnswer))
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
            segments: self.view.segment_count(),
            index_entries: self.view.index_entries(),
            queued_appends: self.queue.queued(),
            queued_bytes: self.queue.queued_bytes(),
            log_start_offset: self.view.log_start_offset(),
            high_watermark: self.view.high_watermark(),
            poisoned: self.poison.is_poisoned(),
            recovered_end: self.metrics.recovered_end(),
        }
    }

    /// Blocking: lets the writer finish everything queued, syncs and stops it. Later appends
    /// fail with [`StorageError::Closed`]. Idempotent; reports a poisoned partition as an error.
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

/// Tells when a queued batch is written and its offsets visible to readers; see
/// [`Partition::append_queued`].
#[derive(Debug)]
pub struct Written(oneshot::Receiver<()>);

impl Written {
    /// Returns once the batch is written, or once its append failed (its [`AppendAnswer`] then
    /// carries the error).
    pub async fn wait(self) {
        let _ = self.0.await;
    }

    /// True once [`Written::wait`] would return at once.
    pub fn is_done(&mut self) -> bool {
        !matches!(self.0.try_recv(), Err(oneshot::error::TryRecvError::Empty))
    }
}

/// The answer to a queued append; see [`Partition::append_queued`].
#[derive(Debug)]
pub struct AppendAnswer(oneshot::Receiver<(Result<Appended, StorageError>, Stamp)>);

impl AppendAnswer {
    /// Waits for what the append's ack asks (written, or covered by an fsync) and returns what
    /// [`Partition::append`] would. `partition` is the one the batch was queued to: it names
    /// the reason when the writer stopped without answering.
    pub async fn wait(self, partition: &Partition) -> Result<Appended, StorageError> {
        match self.0.await {
            Ok((result, answered)) => {
                answered.hop("b6 writer answered -> session task has the answer");
                result
            }
            Err(_) => Err(partition.stopped()),
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
