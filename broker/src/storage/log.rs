//! A partition's log as its writer sees it: the active segment, rolling, syncing, retention.
//!
//! A [`PartitionLog`] sits behind one mutex, shared by the partition's writer thread and the
//! inline append of [`Partition`](super::Partition) (a small batch written on the caller's
//! thread when nothing is queued: `docs/storage.md` § Inline appends); whoever holds the lock
//! appends, so offsets are handed out in lock order. Readers go through the shared [`LogView`].
//! Appending a batch:
//!
//! 1. refuse it whole if any record could not fit even an empty segment (`RECORD_TOO_LARGE`),
//!    or if its last record would pass the largest offset (`StorageError::OffsetOverflow`: the
//!    high watermark after it must still be an `int64`);
//! 2. if the whole batch would fit an empty segment but not what is left of the active one,
//!    *roll* first: seal the active segment (publish, fsync, trim in MAPPED mode), create the
//!    next segment named by the next offset, fsync the directory. In MAPPED mode every fsync of
//!    the roll — the next segment's pre-size and name, the full segment's seal — runs on a
//!    sealing thread while appends go on in the next segment (§ The seal in the background,
//!    below);
//! 3. write as many records as fit the active segment; a batch larger than a whole segment
//!    (only possible with `segment_bytes` below the frame limit) rolls again when the next
//!    record does not fit, and continues in the next segment;
//! 4. publish the segment end, then the high watermark.
//!
//! A record is therefore never split or truncated, and it never moves once it has an offset.
//! Step 2 keeps a batch in one segment whenever it can be: a roll seals (publishes and fsyncs)
//! what was written before it, so a batch split by a roll that then fails — the next segment
//! cannot be created, the disk is full — would leave its first records in the log while its
//! producer is told the append failed. The price is at most one batch of unused space at the
//! end of a segment.
//!
//! # The seal in the background
//!
//! A segment fed WRITTEN batches reaches its roll with most of its bytes not yet synced, and its
//! seal's fsync writes them all: about 1.2 s for 536 MB on a VM disk writing 450 MB/s, during
//! which every append to the partition used to wait. In MAPPED mode the roll now stops writes to
//! the full segment, publishes its end, creates and maps the next segment and hands both to a
//! thread of its own ([`PendingSeal`]), which fsyncs the next segment's pre-size and then the
//! directory, and unmaps, fsyncs and trims the full segment. Appends go on in the new segment at
//! once, and the roll makes no system call that waits for the disk: even the small fsyncs of
//! the next segment queue behind whatever the disk is writing back, such as another partition's
//! seal, and held a 4-partition roll for 0.3–0.9 s when they ran on it (`docs/benchmarks.md`
//! § The roll without an fsync). The rules that keep this safe:
//!
//! * **At most one seal in flight**: the next roll, and the close, wait for it.
//! * **A sync waits for the seal**: [`PartitionLog::sync`] (every FORCED answer, inline or by
//!   group commit) finishes the pending seal first, so a FORCED answer given after a roll
//!   implies that every earlier segment is durable, and so is the name and pre-size of the
//!   segment it was written to. Only WRITTEN and NONE batches — which promise nothing against an
//!   OS crash — are ever answered while an earlier segment, or their own segment's name, is not.
//! * **A failed seal poisons**: the error surfaces at the next append (the thread is checked
//!   without waiting), sync, roll or close, as an I/O error.
//! * **Recovery knows the case**: after an OS crash or a power loss during the seal, the
//!   segment before the last may be torn while still at its pre-sized length (untrimmed).
//!   Recovery then cuts it like a last segment and moves the last segment whole into a
//!   quarantine file (`recovery.rs`, rule 3): by the rules above it holds no FORCED record. A
//!   segment's pre-size is fsynced before its name (`sync_new_segment`), and before the segment
//!   can fill (its roll waits for the seal that made it durable), so an untrimmed segment's
//!   length survives a power loss.
//!
//! FILE mode seals on the writer thread as before: its files are never pre-sized, so recovery
//! could not tell an unfinished seal from damage.
//!
//! A full disk refuses the batch ([`StorageError::NoSpace`], which does not poison) only while
//! no record of it is written; once part of it is, the same shortage is a failure that poisons
//! (see [`PartitionLog::append`]). That holds for a roll too: when the next segment's file cannot
//! be created, the active segment stays sealed, the batch is refused, and the next append
//! finishes the roll first.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime};

use booblik_protocol::{AckPolicy, RecordSet, record_bytes};
use tracing::info;

use super::active::{ActiveSegment, sync_new_segment};
use super::config::WriteMode;
use super::durability::Durability;
use super::error::{IoContext, StorageError};
use super::log_view::{LogEnd, LogView};
use super::recovery::recover_partition;
use super::retention::{RetentionPolicy, SealedSegmentFacts, segments_to_drop};
use super::segment::{Segment, offset_after};

/// What was appended: the first offset of the batch and the offset after its last record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    /// Offset of the batch's first record.
    pub base_offset: i64,
    /// Offset the next record will get (the high watermark after this batch).
    pub log_end_offset: i64,
}

/// The settings one partition's log needs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LogSettings {
    pub(crate) write_mode: WriteMode,
    pub(crate) segment_bytes: u64,
    pub(crate) index_interval_bytes: u32,
    pub(crate) retention: RetentionPolicy,
}

impl LogSettings {
    /// Largest payload a record may have.
    pub(crate) fn max_payload_bytes(&self) -> usize {
        (self.segment_bytes as usize).saturating_sub(record_bytes(0))
    }
}

/// The writer's side of one partition's log.
#[derive(Debug)]
pub(crate) struct PartitionLog {
    dir: PathBuf,
    settings: LogSettings,
    view: Arc<LogView>,
    active: ActiveSegment,
    durability: Durability,
    /// Bytes of the log (from its first segment's start) that a completed fsync covers: raised
    /// after every successful sync and seal, never lowered. Shared, so that a FORCED append
    /// written inline can see without the lock that another sync already covered it.
    durable_log_bytes: Arc<AtomicU64>,
    /// FORCED batches written inline since the last sync (for the group-size metric).
    forced_since_sync: usize,
    /// MAPPED mode: the seal of the segment before the active one, if it is still running or
    /// not yet collected (module docs, § The seal in the background).
    pending_seal: Option<PendingSeal>,
}

/// A full MAPPED segment being sealed (unmap, fsync, trim) on a thread of its own.
#[derive(Debug)]
struct PendingSeal {
    path: PathBuf,
    thread: JoinHandle<Result<(), StorageError>>,
}

impl PendingSeal {
    /// Starts sealing `segment`, whose writes the caller stopped and whose end it published,
    /// after making `next`, the segment the roll created in `dir`, durable: its pre-size, then
    /// its name ([`sync_new_segment`]). Those fsyncs wait behind whatever the disk is writing
    /// back (another partition's seal: up to a segment), so they are kept off the roll.
    fn start(
        segment: ActiveSegment,
        next: Arc<Segment>,
        dir: PathBuf,
        durability: Durability,
    ) -> Result<Self, StorageError> {
        let path = segment.segment().path().to_owned();
        let thread = std::thread::Builder::new()
            .name("booblik-seal".to_owned())
            .spawn(move || {
                let mut segment = segment;
                let started = Instant::now();
                let sealed = sync_new_segment(&next, WriteMode::Mapped, &dir, &durability)
                    .and_then(|()| segment.seal(&durability));
                durability.metrics().sealed(started.elapsed());
                sealed
            })
            .context(|| format!("starting the thread that seals {}", path.display()))?;
        Ok(Self { path, thread })
    }

    fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    /// Waits for the seal. Any failure is an I/O error, which poisons the partition: a seal
    /// that did not finish leaves records the log acknowledged without knowing they are durable.
    fn wait(self) -> Result<(), StorageError> {
        match self.thread.join() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(StorageError::NoSpace { context, source })) => {
                Err(StorageError::io(context, source))
            }
            Ok(Err(error)) => Err(error),
            Err(_) => Err(StorageError::io(
                format!("sealing {}", self.path.display()),
                std::io::Error::other("the sealing thread panicked"),
            )),
        }
    }
}

impl Drop for PartitionLog {
    /// A log dropped without [`PartitionLog::close`] (a poisoned partition, a failed open of
    /// the next one, a crash test) still lets its last seal finish before its files are
    /// touched again: the thread holds the segment's file and mapping.
    fn drop(&mut self) {
        if let Some(seal) = self.pending_seal.take()
            && let Err(error) = seal.wait()
        {
            tracing::warn!(%error, "the seal of a segment failed while its log was dropped");
        }
    }
}

/// Makes what recovery accepted durable before the log takes appends: the segment before the
/// last, the last (its size included, which `ActiveSegment::resume` may just have re-extended
/// to the pre-size that recovery's rule 3 reads) and the directory (their names).
///
/// Why: recovery reads the page cache, which a killed process leaves whole, not the disk. A
/// process killed during a MAPPED roll can leave the full segment unsealed (not yet fsynced)
/// and the next one's size and name not yet durable (the sealing thread does both); a FILE roll
/// killed before its directory fsync leaves the new name undurable. Nothing after the restart
/// would fsync them: the next FORCED answer fsyncs only the last segment. So without this, a
/// power loss within the write-back window after such a restart could take acknowledged FORCED
/// records with it (invariant `forced-after-seal`). Older segments were sealed before the roll
/// that followed them could start. Costs two `fdatasync` and a directory fsync per open.
fn make_recovered_durable(
    segments: &[Arc<Segment>],
    dir: &Path,
    durability: &Durability,
) -> Result<(), StorageError> {
    let from = segments.len().saturating_sub(2);
    for segment in &segments[from..] {
        durability.sync_data(segment.file(), segment.path())?;
    }
    durability.sync_dir(dir)
}

impl PartitionLog {
    /// Opens (recovering) or creates the log in `dir`, which must exist.
    pub(crate) fn open(
        dir: PathBuf,
        settings: LogSettings,
        durability: Durability,
    ) -> Result<Self, StorageError> {
        let recovered = recover_partition(
            &dir,
            settings.index_interval_bytes,
            settings.segment_bytes,
            &durability,
        )?;
        let mut segments = Vec::with_capacity(recovered.len().max(1));
        let mut log_bytes = 0u64;
        for segment in recovered {
            let size = u64::from(segment.end.position);
            segments.push(Arc::new(Segment::with_io(
                segment.base_offset,
                log_bytes,
                segment.path,
                segment.file,
                segment.end,
                segment.index,
                Arc::clone(durability.io()),
            )));
            log_bytes += size;
        }
        let active = if let Some(last) = segments.last() {
            let resumed = ActiveSegment::resume(
                Arc::clone(last),
                settings.write_mode,
                settings.segment_bytes,
                &durability,
            )?;
            make_recovered_durable(&segments, &dir, &durability)?;
            resumed
        } else {
            let active = ActiveSegment::create(
                &dir,
                0,
                0,
                settings.write_mode,
                settings.segment_bytes,
                settings.index_interval_bytes,
                &durability,
            )?;
            sync_new_segment(active.segment(), settings.write_mode, &dir, &durability)?;
            segments.push(Arc::clone(active.segment()));
            active
        };
        let view = Arc::new(LogView::new(segments));
        info!(
            dir = %dir.display(),
            segments = view.segment_count(),
            log_start_offset = view.log_start_offset(),
            high_watermark = view.high_watermark(),
            write_mode = %settings.write_mode,
            "opened partition log"
        );
        let durable_log_bytes = Arc::new(AtomicU64::new(active.log_bytes_end()));
        Ok(Self {
            dir,
            settings,
            view,
            active,
            durability,
            durable_log_bytes,
            forced_since_sync: 0,
            pending_seal: None,
        })
    }

    /// The reader-visible side.
    pub(crate) fn view(&self) -> &Arc<LogView> {
        &self.view
    }

    /// Bytes of the log a completed fsync covers (see the field); shared.
    pub(crate) fn durable_log_bytes(&self) -> &Arc<AtomicU64> {
        &self.durable_log_bytes
    }

    /// Bytes of the log up to the end of the last record written.
    pub(crate) fn log_bytes_end(&self) -> u64 {
        self.active.log_bytes_end()
    }

    /// True when `records` can be appended with nothing but a write into the active segment: no
    /// roll (it fits the room left, the segment is not sealed), and in MAPPED mode no block
    /// reservation. The inline append takes only such batches.
    pub(crate) fn takes_without_roll(&self, records: &RecordSet) -> bool {
        self.active
            .takes_without_roll_or_reservation(records.log_bytes() as u64)
    }

    /// Counts a FORCED batch written inline that the next sync covers.
    pub(crate) fn note_forced_inline(&mut self) {
        self.forced_since_sync += 1;
    }

    /// FORCED batches written inline since the last call; the group-size metric of a sync.
    pub(crate) fn take_forced_since_sync(&mut self) -> usize {
        std::mem::take(&mut self.forced_since_sync)
    }

    /// Everything written so far is durable: raise the shared mark.
    fn mark_durable(&self) {
        self.durable_log_bytes
            .fetch_max(self.active.log_bytes_end(), Ordering::Release);
    }

    /// Appends a batch; see the module docs. The records get consecutive offsets. `ack` is the
    /// batch's: it decides how MAPPED mode writes it (`active.rs`, § FORCED batches in MAPPED
    /// mode); the sync itself is the caller's.
    pub(crate) fn append(
        &mut self,
        records: &RecordSet,
        ack: AckPolicy,
    ) -> Result<Appended, StorageError> {
        let max = self.settings.max_payload_bytes();
        let largest = records.max_payload_len();
        if largest > max {
            return Err(StorageError::RecordTooLarge { size: largest, max });
        }
        // A seal that failed poisons at the next append, not only at the next sync.
        if self
            .pending_seal
            .as_ref()
            .is_some_and(PendingSeal::is_finished)
        {
            self.finish_seal()?;
        }
        let base_offset = self.active.next_offset();
        if offset_after(base_offset, records.count() as u64).is_none() {
            return Err(StorageError::OffsetOverflow {
                high_watermark: base_offset,
                records: records.count(),
            });
        }
        // A roll whose new segment could not be created (a full disk) left the active segment
        // sealed; the log has a place for this batch only once that roll is finished.
        if self.active.is_sealed() {
            self.roll()?;
        }
        // Step 2 of the module docs: keep a batch that can fit one segment in one segment.
        let batch_bytes = records.log_bytes() as u64;
        if batch_bytes > self.active.room_bytes()
            && batch_bytes <= self.settings.segment_bytes
            && !self.active.is_empty()
        {
            self.roll()?;
        }
        let mut payloads = records.iter().peekable();
        let mut fitting: Vec<&[u8]> = Vec::with_capacity(records.count());
        let mut written_records = 0usize;
        while payloads.peek().is_some() {
            let mut room = self.active.room_bytes();
            fitting.clear();
            while let Some(payload) = payloads.next_if(|p| record_bytes(p.len()) as u64 <= room) {
                room -= record_bytes(payload.len()) as u64;
                fitting.push(payload);
            }
            let step = if fitting.is_empty() {
                // The next record fits an empty segment (checked above) but not this one.
                debug_assert!(!self.active.is_empty());
                self.roll()
            } else {
                self.active.write(&fitting, ack)
            };
            match step {
                Ok(()) => written_records += fitting.len(),
                // `write` and `roll` say NoSpace only when they left the log as it was. That
                // refuses the batch whole only if no record of it was written before: otherwise
                // the records written to the previous segment (a batch spanning a roll) are in
                // the log — `seal()` published that segment's end and fsynced them, so they come
                // back after a restart — yet the client is told nothing was written, and a later
                // append would publish a high watermark past them. The log no longer matches
                // what was acknowledged, so this must poison like any failed write.
                Err(StorageError::NoSpace { context, source }) if written_records > 0 => {
                    return Err(StorageError::io(
                        format!(
                            "{context}, after {written_records} records of the batch were \
                             written (a batch spanning a segment roll cannot be refused whole)"
                        ),
                        source,
                    ));
                }
                Err(error) => return Err(error),
            }
        }
        self.active.publish();
        let log_end_offset = self.active.next_offset();
        self.view.publish(LogEnd {
            high_watermark: log_end_offset,
            log_bytes: self.active.log_bytes_end(),
            published: booblik_protocol::probe::Stamp::now(),
        });
        Ok(Appended {
            base_offset,
            log_end_offset,
        })
    }

    /// Makes everything appended so far durable (one `fdatasync`, after an `msync` in MAPPED
    /// mode), after waiting for the pending seal of the segment before the active one, if any:
    /// sealed segments are synced by their seal.
    pub(crate) fn sync(&mut self) -> Result<(), StorageError> {
        self.finish_seal()?;
        self.active.sync(&self.durability)?;
        self.mark_durable();
        Ok(())
    }

    /// True while a MAPPED segment's seal runs on its thread: a [`PartitionLog::sync`] now
    /// would wait for it, up to the fsync of a whole segment.
    pub(crate) fn seal_in_flight(&self) -> bool {
        self.pending_seal
            .as_ref()
            .is_some_and(|seal| !seal.is_finished())
    }

    /// Waits for the pending seal, if any, and returns its failure.
    fn finish_seal(&mut self) -> Result<(), StorageError> {
        match self.pending_seal.take() {
            Some(seal) => seal.wait(),
            None => Ok(()),
        }
    }

    /// True while the seal of the segment before the active one has not been collected.
    #[cfg(test)]
    fn seal_pending(&self) -> bool {
        self.pending_seal.is_some()
    }

    /// Seals the active segment and starts the next one at the next offset.
    ///
    /// `NoSpace` when the next segment's file cannot be created: the active segment stays
    /// sealed — its records published, fsynced and, in MAPPED mode, trimmed, exactly what a
    /// crash right after sealing would leave — and the next append tries the roll again
    /// (sealing is idempotent). The log is as it was, so this refuses the batch.
    ///
    /// In MAPPED mode the seal's unmap, fsync and trim run on a sealing thread once the next
    /// segment exists (module docs, § The seal in the background); until then the full segment
    /// only stops taking writes, and a failed creation leaves it so, to be handed off by the
    /// roll that succeeds (or sealed here by the close).
    fn roll(&mut self) -> Result<(), StorageError> {
        let started = Instant::now();
        // At most one seal in flight.
        self.finish_seal()?;
        let in_background = self.settings.write_mode == WriteMode::Mapped;
        if in_background {
            self.active.stop_writes();
        } else {
            self.active.seal(&self.durability)?;
            self.mark_durable();
        }
        let next = ActiveSegment::create(
            &self.dir,
            self.active.next_offset(),
            self.active.log_bytes_end(),
            self.settings.write_mode,
            self.settings.segment_bytes,
            self.settings.index_interval_bytes,
            &self.durability,
        )?;
        if !in_background {
            sync_new_segment(
                next.segment(),
                self.settings.write_mode,
                &self.dir,
                &self.durability,
            )?;
        }
        self.view.push_segment(Arc::clone(next.segment()));
        let full = std::mem::replace(&mut self.active, next);
        if in_background {
            self.pending_seal = Some(PendingSeal::start(
                full,
                Arc::clone(self.active.segment()),
                self.dir.clone(),
                self.durability.clone(),
            )?);
        }
        // Appends to this partition waited for all of it (FILE mode: the seal's fsync and the
        // next segment's directory fsync too; MAPPED mode: no fsync at all).
        self.durability.metrics().rolled(started.elapsed());
        Ok(())
    }

    /// Drops the sealed segments the retention policy no longer keeps; returns how many.
    pub(crate) fn enforce_retention(&mut self, now: SystemTime) -> Result<usize, StorageError> {
        if self.settings.retention.is_disabled() {
            return Ok(0);
        }
        let segments = self.view.snapshot();
        let (active, sealed) = segments.split_last().expect("a log has an active segment");
        // A segment whose seal is still running (the newest sealed one, MAPPED mode) is kept
        // until the seal ends: dropped now, it would still be fsynced, up to a whole segment
        // written to disk on its way to being unlinked. It counts toward the size like the
        // active segment; the writer's next retention check can drop it.
        let sealing = self.seal_in_flight();
        let (sealed, kept) = match (sealing, sealed.split_last()) {
            (true, Some((being_sealed, older))) => (older, u64::from(being_sealed.end().position)),
            _ => (sealed, 0),
        };
        let mut facts = Vec::with_capacity(sealed.len());
        for segment in sealed {
            let last_modified = segment
                .file()
                .metadata()
                .and_then(|m| m.modified())
                .context(|| format!("stat of {}", segment.path().display()))?;
            facts.push(SealedSegmentFacts {
                size_bytes: u64::from(segment.end().position),
                last_modified,
            });
        }
        let active_bytes = u64::from(active.end().position) + kept;
        let count = segments_to_drop(self.settings.retention, &facts, active_bytes, now);
        if count == 0 {
            return Ok(0);
        }
        let removed = self.view.remove_oldest(count);
        for segment in &removed {
            if let Err(error) = segment.retire() {
                tracing::warn!(%error, "retention could not rename a segment; it is unlinked when unpinned");
            }
        }
        self.durability.sync_dir(&self.dir)?;
        info!(
            dir = %self.dir.display(),
            dropped_segments = count,
            log_start_offset = self.view.log_start_offset(),
            "retention dropped old segments"
        );
        // Segments nobody reads are unlinked here; pinned ones when their reader lets go.
        drop(removed);
        Ok(count)
    }

    /// Seals the active segment for a clean stop: sync, and in MAPPED mode unmap and trim.
    pub(crate) fn close(mut self) -> Result<(), StorageError> {
        self.finish_seal()?;
        self.active.seal(&self.durability)?;
        self.mark_durable();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use booblik_protocol::RecordScanner;

    use super::*;
    use crate::storage::io::StorageIo;
    use crate::storage::metrics::PartitionMetrics;
    use crate::storage::test_io::SimIo;

    thread_local! {
        /// This test's simulated disk (each test runs on its own thread).
        static SIM: Arc<SimIo> = Arc::new(SimIo::new());
    }

    fn sim_io() -> Arc<SimIo> {
        SIM.with(Arc::clone)
    }

    fn sim() -> Arc<dyn StorageIo> {
        sim_io()
    }

    const PAYLOAD_BYTES: usize = 1000;
    /// Room for three records of `PAYLOAD_BYTES`: the fourth rolls.
    const SEGMENT_BYTES: u64 = 3 * (PAYLOAD_BYTES as u64 + 8) + 100;
    const MODES: [WriteMode; 2] = [WriteMode::Mapped, WriteMode::File];

    fn open(dir: &std::path::Path, mode: WriteMode) -> PartitionLog {
        try_open(dir, mode).unwrap()
    }

    fn try_open(dir: &std::path::Path, mode: WriteMode) -> Result<PartitionLog, StorageError> {
        let settings = LogSettings {
            write_mode: mode,
            segment_bytes: SEGMENT_BYTES,
            index_interval_bytes: 4096,
            retention: RetentionPolicy {
                retention_bytes: None,
                retention_ms: None,
            },
        };
        let durability = Durability::new(sim(), Arc::new(PartitionMetrics::new("t", 0)));
        PartitionLog::open(dir.to_path_buf(), settings, durability)
    }

    fn payload(n: u8) -> Vec<u8> {
        vec![n; PAYLOAD_BYTES]
    }

    fn batch(numbers: std::ops::Range<u8>) -> RecordSet {
        RecordSet::from_payloads(numbers.map(payload)).unwrap()
    }

    /// Every record from offset 0 to the high watermark.
    fn records(log: &PartitionLog) -> Vec<Vec<u8>> {
        let view = log.view();
        let mut found = Vec::new();
        while (found.len() as i64) < view.high_watermark() {
            let slice = view.read(found.len() as i64, u32::MAX / 2).unwrap();
            let bytes = slice.to_bytes().unwrap();
            let before = found.len();
            for record in RecordScanner::new(&bytes) {
                assert!(record.crc_matches());
                found.push(record.payload.to_vec());
            }
            assert!(found.len() > before, "no whole record at offset {before}");
        }
        found
    }

    /// The error of a batch that stopped after its first record was written: a failure that
    /// poisons, never a refusal (the record is in the log).
    fn assert_fails_after_one_record(error: &StorageError, mode: WriteMode) {
        assert!(
            matches!(error, StorageError::Io { .. }) && !error.is_refusal(),
            "{mode:?}: {error}"
        );
        assert!(
            error.to_string().contains("after 1 records of the batch"),
            "{mode:?}: {error}"
        );
    }

    #[test]
    fn a_full_disk_refuses_a_batch_whole_and_the_next_append_lands_after_the_last_record() {
        for mode in MODES {
            let dir = tempfile::tempdir().unwrap();
            let mut log = open(dir.path(), mode);
            log.append(&batch(0..3), AckPolicy::Written).unwrap();
            // The segment is full, so the next batch rolls first and then finds no space.
            sim_io().set_free_bytes(Some(0));
            let refused = log.append(&batch(3..4), AckPolicy::Written);
            sim_io().set_free_bytes(None);
            let error = refused.unwrap_err();
            assert!(
                matches!(error, StorageError::NoSpace { .. }) && error.is_refusal(),
                "{mode:?}: {error}"
            );
            assert_eq!(log.view().high_watermark(), 3, "{mode:?}");

            let appended = log.append(&batch(4..6), AckPolicy::Written).unwrap();
            assert_eq!(appended.base_offset, 3, "{mode:?}");
            let expected: Vec<Vec<u8>> = [0, 1, 2, 4, 5].map(payload).into();
            assert_eq!(records(&log), expected, "{mode:?}");
            log.close().unwrap();
            let log = open(dir.path(), mode);
            assert_eq!(records(&log), expected, "{mode:?} after reopening");
        }
    }

    #[test]
    fn a_batch_that_fits_an_empty_segment_is_never_split_by_a_roll() {
        for mode in MODES {
            let dir = tempfile::tempdir().unwrap();
            let mut log = open(dir.path(), mode);
            log.append(&batch(0..2), AckPolicy::Written).unwrap();
            // Room for one more record; the next batch has two, which fit an empty segment.
            let appended = log.append(&batch(2..4), AckPolicy::Written).unwrap();
            assert_eq!(appended.base_offset, 2, "{mode:?}");
            let view = log.view();
            let first = view.read(0, u32::MAX / 2).unwrap();
            assert_eq!(first.segment_base_offset(), 0, "{mode:?}");
            let in_first = RecordScanner::new(&first.to_bytes().unwrap()).count();
            assert_eq!(
                in_first, 2,
                "{mode:?}: the first segment ends before the batch"
            );
            let second = view.read(2, u32::MAX / 2).unwrap();
            assert_eq!(second.segment_base_offset(), 2, "{mode:?}");
            assert_eq!(records(&log), (0..4).map(payload).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_full_disk_at_the_roll_before_a_batch_writes_none_of_it() {
        for mode in MODES {
            let dir = tempfile::tempdir().unwrap();
            let mut log = open(dir.path(), mode);
            log.append(&batch(0..2), AckPolicy::Written).unwrap();
            // Room for one record of the two: the batch rolls first, then finds no space.
            sim_io().set_free_bytes(Some(0));
            let refused = log.append(&batch(2..4), AckPolicy::Written);
            sim_io().set_free_bytes(None);
            let error = refused.unwrap_err();
            assert!(error.is_refusal(), "{mode:?}: {error}");
            assert_eq!(log.view().high_watermark(), 2, "{mode:?}");
            assert_eq!(records(&log), (0..2).map(payload).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_file_roll_holds_appends_for_the_seal_s_fsync_and_counts_how_long() {
        const HELD: std::time::Duration = std::time::Duration::from_millis(50);
        let dir = tempfile::tempdir().unwrap();
        let mut log = open(dir.path(), WriteMode::File);
        log.append(&batch(0..3), AckPolicy::Written).unwrap();
        assert_eq!(log.durability.metrics().rolls(), 0);
        let sim = sim_io();
        std::thread::scope(|scope| {
            // The disk holds every fsync for HELD: the roll's seal waits that long, and the
            // append that rolls waits with it.
            let stall = sim.stall_fsyncs();
            scope.spawn(move || {
                std::thread::sleep(HELD);
                drop(stall);
            });
            let started = std::time::Instant::now();
            log.append(&batch(3..4), AckPolicy::Written).unwrap();
            assert!(started.elapsed() >= HELD, "the append did not wait");
        });
        let metrics = log.durability.metrics();
        assert_eq!(metrics.rolls(), 1);
        assert!(
            metrics.longest_roll_micros() >= HELD.as_micros() as u64,
            "the roll counted {} us",
            metrics.longest_roll_micros()
        );
        assert_eq!(metrics.seals(), 0, "FILE mode seals on the writer's thread");
    }

    #[test]
    fn a_mapped_roll_appends_on_while_every_fsync_is_held_and_a_sync_waits_for_the_seal() {
        const HELD: std::time::Duration = std::time::Duration::from_millis(50);
        /// Longest the disk is held in the first part: far longer than an append without an
        /// fsync takes, so an append that waited for the seal fails the test instead of hanging.
        const SAFETY: std::time::Duration = std::time::Duration::from_secs(10);
        let dir = tempfile::tempdir().unwrap();
        let mut log = open(dir.path(), WriteMode::Mapped);
        log.append(&batch(0..3), AckPolicy::Written).unwrap();
        let sim = sim_io();
        let released = std::sync::atomic::AtomicBool::new(false);
        let full = dir
            .path()
            .join(crate::storage::segment::segment_file_name(0));
        std::thread::scope(|scope| {
            // Every fsync is held — the full segment's, the next segment's pre-size, the
            // directory's — as a disk busy writing another partition's seal back holds them.
            let stall = sim.stall_all_fsyncs();
            let released = &released;
            let (stop, stopped) = std::sync::mpsc::channel::<()>();
            let releaser = scope.spawn(move || {
                // Let the fsync through when told, or after SAFETY.
                let _ = stopped.recv_timeout(SAFETY);
                released.store(true, std::sync::atomic::Ordering::SeqCst);
                drop(stall);
            });
            // The batch rolls; no fsync gets through, yet the append returns and the next one
            // too.
            log.append(&batch(3..4), AckPolicy::Written).unwrap();
            log.append(&batch(4..5), AckPolicy::Written).unwrap();
            assert!(
                !released.load(std::sync::atomic::Ordering::SeqCst),
                "the appends waited for the held fsync"
            );
            assert!(log.seal_pending());
            assert_eq!(records(&log), (0..5).map(payload).collect::<Vec<_>>());
            // A sync — what every FORCED answer waits for — cannot finish before the seal.
            scope.spawn(move || {
                std::thread::sleep(HELD);
                let _ = stop.send(());
            });
            log.sync().unwrap();
            assert!(
                released.load(std::sync::atomic::Ordering::SeqCst),
                "the sync finished while the seal's fsync was held"
            );
            releaser.join().unwrap();
        });
        assert!(!log.seal_pending());
        let metrics = log.durability.metrics();
        assert_eq!((metrics.rolls(), metrics.seals()), (1, 1));
        assert!(
            metrics.longest_seal_micros() >= HELD.as_micros() as u64,
            "the seal counted {} us",
            metrics.longest_seal_micros()
        );
        assert_eq!(
            std::fs::metadata(&full).unwrap().len(),
            3 * (PAYLOAD_BYTES + 8) as u64,
            "the sealed segment was trimmed to its records"
        );
    }

    #[test]
    fn retention_keeps_a_segment_whose_seal_is_running_and_drops_it_once_the_seal_ends() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = open(dir.path(), WriteMode::Mapped);
        log.settings.retention.retention_bytes = Some(1);
        log.append(&batch(0..3), AckPolicy::Written).unwrap();
        let full = dir
            .path()
            .join(crate::storage::segment::segment_file_name(0));
        let sim = sim_io();
        let stall = sim.stall_fsyncs_of(&full);
        // The batch rolls; the full segment's seal waits for its fsync.
        log.append(&batch(3..4), AckPolicy::Written).unwrap();
        assert!(log.seal_pending());
        assert_eq!(
            log.enforce_retention(SystemTime::now()).unwrap(),
            0,
            "a segment still being sealed was dropped"
        );
        assert_eq!(log.view().log_start_offset(), 0);
        drop(stall);
        log.sync().unwrap();
        assert_eq!(log.enforce_retention(SystemTime::now()).unwrap(), 1);
        assert_eq!(log.view().log_start_offset(), 3);
        assert_eq!(log.view().high_watermark(), 4);
    }

    #[test]
    fn a_mapped_seal_that_fails_fails_the_next_sync_as_an_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = open(dir.path(), WriteMode::Mapped);
        log.append(&batch(0..3), AckPolicy::Written).unwrap();
        // The full segment's next fsync is its seal's, on the sealing thread.
        let full = dir
            .path()
            .join(crate::storage::segment::segment_file_name(0));
        sim_io().fail_next_fsync_of(&full);
        log.append(&batch(3..4), AckPolicy::Written).unwrap();
        let error = log.sync().unwrap_err();
        assert!(
            !error.is_refusal(),
            "an I/O failure, which poisons: {error}"
        );
        assert!(error.to_string().contains("fdatasync"), "{error}");
    }

    #[test]
    fn space_running_out_after_part_of_a_batch_was_written_is_not_a_refusal() {
        for mode in MODES {
            let dir = tempfile::tempdir().unwrap();
            let mut log = open(dir.path(), mode);
            log.append(&batch(0..2), AckPolicy::Written).unwrap();
            // A batch larger than a whole segment (4 records, room for 3) must be split. Room
            // for its first record in this segment (MAPPED reserved it with the first batch;
            // FILE needs its bytes), none for the rest after the roll.
            let free = match mode {
                WriteMode::Mapped => 0,
                WriteMode::File => (PAYLOAD_BYTES + 8) as u64,
            };
            sim_io().set_free_bytes(Some(free));
            let failed = log.append(&batch(2..6), AckPolicy::Written);
            sim_io().set_free_bytes(None);
            assert_fails_after_one_record(&failed.unwrap_err(), mode);
        }
    }

    #[test]
    fn a_segment_file_that_cannot_be_created_refuses_the_batch_and_the_next_append_finishes_the_roll()
     {
        for mode in MODES {
            let dir = tempfile::tempdir().unwrap();
            let mut log = open(dir.path(), mode);
            log.append(&batch(0..2), AckPolicy::Written).unwrap();
            // Room for one more record: a batch of two rolls, and the new segment's file cannot
            // be created (no inode, however many bytes are free). Twice: a failed try leaves
            // nothing behind that would stop the next one.
            sim_io().refuse_new_files(true);
            for _ in 0..2 {
                let error = log.append(&batch(2..4), AckPolicy::Written).unwrap_err();
                assert!(
                    matches!(error, StorageError::NoSpace { .. }) && error.is_refusal(),
                    "{mode:?}: {error}"
                );
                assert_eq!(log.view().high_watermark(), 2, "{mode:?}");
                assert_eq!(log.sync().map_err(|e| e.to_string()), Ok(()), "{mode:?}");
            }
            sim_io().refuse_new_files(false);

            // One record would fit what is left of the old segment, but that one is sealed.
            let appended = log.append(&batch(4..5), AckPolicy::Written).unwrap();
            assert_eq!(appended.base_offset, 2, "{mode:?}");
            let expected: Vec<Vec<u8>> = [0, 1, 4].map(payload).into();
            assert_eq!(records(&log), expected, "{mode:?}");
            assert_eq!(
                log.view().snapshot().len(),
                2,
                "{mode:?}: one roll, one new segment"
            );
            log.close().unwrap();
            let log = open(dir.path(), mode);
            assert_eq!(records(&log), expected, "{mode:?} after reopening");
        }
    }

    #[test]
    fn a_log_whose_roll_was_refused_closes_and_reopens_with_every_record() {
        for mode in MODES {
            let dir = tempfile::tempdir().unwrap();
            let mut log = open(dir.path(), mode);
            log.append(&batch(0..3), AckPolicy::Written).unwrap();
            sim_io().refuse_new_files(true);
            let refused = log.append(&batch(3..4), AckPolicy::Written);
            sim_io().refuse_new_files(false);
            assert!(refused.unwrap_err().is_refusal(), "{mode:?}");
            log.close().unwrap();
            let mut log = open(dir.path(), mode);
            assert_eq!(records(&log), (0..3).map(payload).collect::<Vec<_>>());
            assert_eq!(
                log.append(&batch(3..4), AckPolicy::Written)
                    .unwrap()
                    .base_offset,
                3,
                "{mode:?}"
            );
        }
    }

    #[test]
    fn a_segment_file_that_cannot_be_created_in_the_middle_of_a_batch_is_not_a_refusal() {
        for mode in MODES {
            let dir = tempfile::tempdir().unwrap();
            let mut log = open(dir.path(), mode);
            log.append(&batch(0..2), AckPolicy::Written).unwrap();
            // A batch larger than a whole segment (4 records, room for 3): its first record
            // goes into this segment, then the roll cannot create the next one.
            sim_io().refuse_new_files(true);
            let failed = log.append(&batch(2..6), AckPolicy::Written);
            sim_io().refuse_new_files(false);
            assert_fails_after_one_record(&failed.unwrap_err(), mode);
        }
    }

    #[test]
    fn finding_a_record_whose_walk_is_not_cached_is_left_to_a_thread_that_may_wait() {
        use crate::storage::segment::evict_from_page_cache;

        let dir = tempfile::tempdir().unwrap();
        let mut log = open(dir.path(), WriteMode::File);
        log.append(&batch(0..3), AckPolicy::Written).unwrap();
        log.sync().unwrap();
        let view = log.view();
        let segment = Arc::clone(&view.snapshot()[0]);
        evict_from_page_cache(segment.file());
        let record_bytes = (PAYLOAD_BYTES + 8) as u64;
        let cached = |offset| view.locate(offset, true).unwrap().map(|at| at.log_bytes());

        // Offset 1 is found by walking from the index entry at offset 0: bytes not cached.
        assert_eq!(cached(1), None);
        // Offsets that need no walk: an index entry, and the end of the log.
        assert_eq!(cached(0), Some(0));
        assert_eq!(cached(3), Some(3 * record_bytes));

        // Where waiting is fine, the walk reads the disk, and then the bytes are cached.
        let waited = view.locate(1, false).unwrap().unwrap();
        assert_eq!(waited.log_bytes(), record_bytes);
        assert_eq!(
            view.slice_at(&waited, 100).unwrap().position(),
            record_bytes
        );
        assert_eq!(cached(1), Some(record_bytes));
    }

    #[test]
    fn reopening_makes_the_last_two_segments_and_the_directory_durable() {
        // A process killed during a roll leaves the page cache whole and the disk behind it:
        // the full segment's seal, the next one's size and name may not have reached the disk.
        // Reopening must fsync them, since no FORCED answer after it would.
        for mode in MODES {
            let dir = tempfile::tempdir().unwrap();
            let mut log = open(dir.path(), mode);
            log.append(&batch(0..3), AckPolicy::Written).unwrap();
            log.append(&batch(3..4), AckPolicy::Written).unwrap(); // rolls
            drop(log);
            let full = dir
                .path()
                .join(crate::storage::segment::segment_file_name(0));
            let last = dir
                .path()
                .join(crate::storage::segment::segment_file_name(3));
            for (armed, what) in [
                (Some(&full), "the segment before the last"),
                (Some(&last), "the last segment"),
                (None, "the directory"),
            ] {
                match armed {
                    Some(path) => sim_io().fail_next_fsync_of(path),
                    None => sim_io().fail_next_directory_fsync(),
                }
                assert!(
                    try_open(dir.path(), mode).is_err(),
                    "{mode}: reopening did not fsync {what}"
                );
            }
            let log = open(dir.path(), mode);
            assert_eq!(records(&log), (0..4).map(payload).collect::<Vec<_>>());
        }
    }
}
