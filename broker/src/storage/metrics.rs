//! What the storage counts: exported through the `metrics` crate (labels `topic`, `partition`)
//! and kept in plain atomics for [`Partition::stats`](super::Partition::stats), which tests read.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use metrics::{Counter, Histogram};

/// Counter: fsync/fdatasync calls (segment data and directories).
pub const FSYNCS_TOTAL: &str = "booblik_storage_fsyncs_total";
/// Histogram: FORCED appends answered by one group-commit fsync.
pub const FSYNC_GROUP_SIZE: &str = "booblik_storage_fsync_group_size";
/// Counter: records appended.
pub const APPENDED_RECORDS_TOTAL: &str = "booblik_storage_appended_records_total";
/// Counter: batches refused because the disk (or a quota) was full.
pub const NO_SPACE_REFUSALS_TOTAL: &str = "booblik_storage_no_space_refusals_total";
/// Counter: WRITTEN and FORCED batches appended on the caller's thread, without the writer
/// thread (`docs/storage.md` § Inline appends).
pub const INLINE_APPENDS_TOTAL: &str = "booblik_storage_inline_appends_total";
/// Counter: fsyncs a caller's thread did for FORCED batches it appended inline.
pub const INLINE_SYNCS_TOTAL: &str = "booblik_storage_inline_syncs_total";
/// Histogram: seconds each segment roll held its partition's appends: creating the next
/// segment and the directory fsync, plus, in FILE mode, sealing the full segment (an fsync of
/// everything written to it and not yet synced). In MAPPED mode the seal runs on a thread of its
/// own ([`SEAL_SECONDS`]) and a roll waits only for the previous roll's seal, if that one is
/// still running (`docs/storage.md` § Acknowledgements and durability).
pub const ROLL_SECONDS: &str = "booblik_storage_roll_seconds";
/// Histogram: seconds each seal of a full MAPPED segment took on its sealing thread (the fsync
/// of what was not yet synced, the unmap, the trim). FORCED appends after a roll wait for it.
pub const SEAL_SECONDS: &str = "booblik_storage_seal_seconds";

/// Counter: damaged tails recovery moved aside into a quarantine file (`docs/storage.md`
/// § Recovery).
pub const RECOVERY_QUARANTINES_TOTAL: &str = "booblik_storage_recovery_quarantines_total";

/// How recovery found the end of a partition's last segment when the partition was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RecoveredEnd {
    /// Nothing to recover: the partition directory held no segment.
    #[default]
    New,
    /// The file ended right after its last whole record.
    Clean,
    /// A zero length followed the last whole record: unwritten space, or a MAPPED record whose
    /// length was not yet stored (or a damaged length); cut.
    ZeroLength {
        /// Whether anything but zeros followed the zero length (within the bytes looked at).
        nonzero_after: bool,
    },
    /// A torn write followed the last whole record (a cut header, a record running past the
    /// end of the file or declaring more than the largest record, a CRC mismatch with no valid
    /// record right after it): cut.
    Torn {
        /// Bytes cut.
        discarded_bytes: u64,
    },
    /// A damaged record followed by a valid one (unsynced pages written back out of order):
    /// the tail from the damaged record on was moved to a quarantine file, then cut.
    Quarantined {
        /// Bytes moved aside (the cut tail up to its last non-zero byte).
        quarantined_bytes: u64,
    },
}

/// Registers descriptions of the storage metrics with the installed recorder.
pub fn describe_metrics() {
    metrics::describe_counter!(
        FSYNCS_TOTAL,
        "fsync and fdatasync calls issued by the storage"
    );
    metrics::describe_histogram!(
        FSYNC_GROUP_SIZE,
        "FORCED appends acknowledged by one group-commit fsync"
    );
    metrics::describe_counter!(APPENDED_RECORDS_TOTAL, "records appended to the log");
    metrics::describe_counter!(
        NO_SPACE_REFUSALS_TOTAL,
        "batches refused whole because the disk or a quota was full"
    );
    metrics::describe_counter!(
        INLINE_APPENDS_TOTAL,
        "batches appended on the caller's thread, without the writer thread"
    );
    metrics::describe_counter!(
        INLINE_SYNCS_TOTAL,
        "fsyncs done on the caller's thread for FORCED batches it appended inline"
    );
    metrics::describe_histogram!(
        ROLL_SECONDS,
        metrics::Unit::Seconds,
        "seconds each segment roll held its partition's appends (the next segment's creation; in FILE mode also the full segment's fsync and the directory fsync)"
    );
    metrics::describe_histogram!(
        SEAL_SECONDS,
        metrics::Unit::Seconds,
        "seconds each seal of a full MAPPED segment took on its sealing thread (the next segment's size and name made durable, then unmap, fsync, trim)"
    );
    metrics::describe_counter!(
        RECOVERY_QUARANTINES_TOTAL,
        "damaged log tails recovery moved aside into a quarantine file"
    );
}

/// A snapshot of one partition's counters and shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PartitionStats {
    /// fsync/fdatasync calls so far (segment data and directories).
    pub fsyncs: u64,
    /// Group-commit fsyncs that answered FORCED appends.
    pub forced_groups: u64,
    /// Records appended since the partition was opened.
    pub appended_records: u64,
    /// Batches refused whole because the disk or a quota was full.
    pub no_space_refusals: u64,
    /// Batches appended on the caller's thread, without the writer thread (counted in
    /// `appended_records` too).
    pub inline_appends: u64,
    /// fsyncs a caller's thread did for FORCED batches it appended inline (counted in `fsyncs`
    /// and `forced_groups` too).
    pub inline_syncs: u64,
    /// Segment rolls since the partition was opened.
    pub rolls: u64,
    /// The longest of those rolls, microseconds: how long appends to the partition waited
    /// for it (`ROLL_SECONDS` has them all).
    pub longest_roll_micros: u64,
    /// Seals of full MAPPED segments finished on their sealing thread.
    pub seals: u64,
    /// The longest of those seals, microseconds (`SEAL_SECONDS` has them all).
    pub longest_seal_micros: u64,
    /// Segment files in the log (sealed and active).
    pub segments: usize,
    /// Entries of the sparse offset indexes of all segments.
    pub index_entries: usize,
    /// Appends waiting in the writer queue or being handled by the writer, plus one being
    /// written inline on a caller's thread.
    pub queued_appends: usize,
    /// Bytes of records those appends reserved in the writer queue (at most
    /// `writer_queue_bytes`).
    pub queued_bytes: u64,
    /// First offset in the log.
    pub log_start_offset: i64,
    /// Offset the next record will get.
    pub high_watermark: i64,
    /// True once an fsync or write failed.
    pub poisoned: bool,
    /// How recovery found the end of the log when the partition was opened.
    pub recovered_end: RecoveredEnd,
}

/// The metric handles and plain counters of one partition.
#[derive(Debug)]
pub(crate) struct PartitionMetrics {
    fsyncs_metric: Counter,
    group_size_metric: Histogram,
    appended_metric: Counter,
    no_space_metric: Counter,
    quarantines_metric: Counter,
    inline_appends_metric: Counter,
    inline_syncs_metric: Counter,
    roll_metric: Histogram,
    seal_metric: Histogram,
    fsyncs: AtomicU64,
    forced_groups: AtomicU64,
    appended_records: AtomicU64,
    no_space_refusals: AtomicU64,
    inline_appends: AtomicU64,
    inline_syncs: AtomicU64,
    rolls: AtomicU64,
    longest_roll_micros: AtomicU64,
    seals: AtomicU64,
    longest_seal_micros: AtomicU64,
    recovered_end: Mutex<RecoveredEnd>,
}

impl PartitionMetrics {
    pub(crate) fn new(topic: &str, partition: i32) -> Self {
        let labels = [
            ("topic", topic.to_owned()),
            ("partition", partition.to_string()),
        ];
        Self {
            fsyncs_metric: metrics::counter!(FSYNCS_TOTAL, &labels),
            group_size_metric: metrics::histogram!(FSYNC_GROUP_SIZE, &labels),
            appended_metric: metrics::counter!(APPENDED_RECORDS_TOTAL, &labels),
            no_space_metric: metrics::counter!(NO_SPACE_REFUSALS_TOTAL, &labels),
            quarantines_metric: metrics::counter!(RECOVERY_QUARANTINES_TOTAL, &labels),
            inline_appends_metric: metrics::counter!(INLINE_APPENDS_TOTAL, &labels),
            inline_syncs_metric: metrics::counter!(INLINE_SYNCS_TOTAL, &labels),
            roll_metric: metrics::histogram!(ROLL_SECONDS, &labels),
            seal_metric: metrics::histogram!(SEAL_SECONDS, &labels),
            fsyncs: AtomicU64::new(0),
            forced_groups: AtomicU64::new(0),
            appended_records: AtomicU64::new(0),
            no_space_refusals: AtomicU64::new(0),
            inline_appends: AtomicU64::new(0),
            inline_syncs: AtomicU64::new(0),
            rolls: AtomicU64::new(0),
            longest_roll_micros: AtomicU64::new(0),
            seals: AtomicU64::new(0),
            longest_seal_micros: AtomicU64::new(0),
            recovered_end: Mutex::new(RecoveredEnd::New),
        }
    }

    pub(crate) fn fsynced(&self) {
        self.fsyncs_metric.increment(1);
        self.fsyncs.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn forced_group(&self, waiters: usize) {
        self.group_size_metric.record(waiters as f64);
        self.forced_groups.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn appended(&self, records: usize) {
        self.appended_metric.increment(records as u64);
        self.appended_records
            .fetch_add(records as u64, Ordering::Relaxed);
    }

    pub(crate) fn refused_for_space(&self) {
        self.no_space_metric.increment(1);
        self.no_space_refusals.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn appended_inline(&self) {
        self.inline_appends_metric.increment(1);
        self.inline_appends.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn synced_inline(&self) {
        self.inline_syncs_metric.increment(1);
        self.inline_syncs.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn rolled(&self, took: std::time::Duration) {
        self.roll_metric.record(took.as_secs_f64());
        self.rolls.fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.longest_roll_micros
            .fetch_max(micros, Ordering::Relaxed);
    }

    pub(crate) fn recovered(&self, end: RecoveredEnd) {
        if matches!(end, RecoveredEnd::Quarantined { .. }) {
            self.quarantines_metric.increment(1);
        }
        *self
            .recovered_end
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = end;
    }

    pub(crate) fn recovered_end(&self) -> RecoveredEnd {
        *self
            .recovered_end
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn fsyncs(&self) -> u64 {
        self.fsyncs.load(Ordering::Relaxed)
    }

    pub(crate) fn forced_groups(&self) -> u64 {
        self.forced_groups.load(Ordering::Relaxed)
    }

    pub(crate) fn appended_records(&self) -> u64 {
        self.appended_records.load(Ordering::Relaxed)
    }

    pub(crate) fn no_space_refusals(&self) -> u64 {
        self.no_space_refusals.load(Ordering::Relaxed)
    }

    pub(crate) fn inline_appends(&self) -> u64 {
        self.inline_appends.load(Ordering::Relaxed)
    }

    pub(crate) fn inline_syncs(&self) -> u64 {
        self.inline_syncs.load(Ordering::Relaxed)
    }

    pub(crate) fn rolls(&self) -> u64 {
        self.rolls.load(Ordering::Relaxed)
    }

    pub(crate) fn longest_roll_micros(&self) -> u64 {
        self.longest_roll_micros.load(Ordering::Relaxed)
    }

    pub(crate) fn sealed(&self, took: std::time::Duration) {
        self.seal_metric.record(took.as_secs_f64());
        self.seals.fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.longest_seal_micros
            .fetch_max(micros, Ordering::Relaxed);
    }

    pub(crate) fn seals(&self) -> u64 {
        self.seals.load(Ordering::Relaxed)
    }

    pub(crate) fn longest_seal_micros(&self) -> u64 {
        self.longest_seal_micros.load(Ordering::Relaxed)
    }
}
