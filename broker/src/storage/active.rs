//! The writer's side of the segment being appended to, in either write mode.
//!
//! Only the partition's writer thread owns an [`ActiveSegment`]. It keeps the private write
//! position (ahead of what readers see while a batch is being written), the mapping in MAPPED
//! mode, and how far the last fsync reached. Readers see the segment through the shared
//! [`Segment`] once [`ActiveSegment::publish`] has run.
//!
//! | | MAPPED | FILE |
//! |---|---|---|
//! | file size while active | capacity (pre-sized, zeros) | bytes written |
//! | disk blocks while active | reserved with `fallocate`, [`ALLOCATION_CHUNK_BYTES`] at a time | bytes written |
//! | append | copy into the mapping: payload, CRC, length last; a FORCED batch: zeros ahead of it now and then, one `pwrite`, then its first length | one `pwrite` per batch |
//! | end of the log on disk | the first zero length | the end of the file |
//! | durable after | `msync` of the dirty range + `fdatasync` | `fdatasync` |
//! | sealing / closing | unmap, sync, trim the file to the bytes written | sync |
//! | a full disk (`ENOSPC`, `EDQUOT`) | the reservation fails before any copy | `pwrite` fails; the file is cut back |
//!
//! # A full disk
//!
//! A pre-sized MAPPED segment is sparse: the first store into a page of it makes the filesystem
//! allocate a block inside the page fault, and when the disk is full the kernel answers that
//! fault with `SIGBUS`, which kills the broker. So before records are copied into the mapping,
//! their range is reserved with `fallocate` (mode 0, inside the file size, so the size does not
//! change), and the shortage becomes an error returned before anything was written. A
//! filesystem that cannot `fallocate` (`EOPNOTSUPP`) gets a warning and the old, sparse
//! behaviour. In FILE mode `pwrite` itself reports the shortage, possibly after writing part of
//! the batch, so the file is cut back to the private write position first.
//!
//! # FORCED batches in MAPPED mode
//!
//! A batch whose append is answered only after an fsync (ack FORCED) is not copied into the
//! mapping: it is encoded into the scratch buffer and written into the same pre-sized, reserved
//! file with one `pwrite`, its first record's length zero, and then that length with a second
//! `pwrite` — so a process killed in between leaves a zero length where the batch starts, as a
//! store into the mapping would. The reason is the fsync that follows. The `fdatasync` of a
//! file whose dirty pages are mapped writable write-protects those pages, and the next store into
//! each of them faults through the file system's `page_mkwrite`. On this project's VMs (ext4,
//! kernel 6.18) that cycle made every group commit's `fdatasync` about three times as long as the
//! same bytes written with `pwrite` (344–366 against 121 µs on average, one connection, 16 FORCED
//! batches in flight), and halved FORCED throughput. A WRITTEN batch, which no fsync follows at
//! once, keeps the copy into the mapping, which is the cheaper write (`docs/benchmarks.md` §
//! FORCED appends and the mapping).
//!
//! Before such a `pwrite`, the file past the batch is written with zeros, [`ZERO_AHEAD_BYTES`]
//! at a time, so the fsyncs of the FORCED batches that follow overwrite written blocks instead
//! of converting reserved ones, which costs each of them a write of the file's extent tree. The
//! zeros only ever land at or past the end of the records, inside the reserved blocks; recovery
//! reads them as the end of the log, as it reads the reserved space they replace.
//!
//! Either way [`ActiveSegment::write`] returns [`StorageError::NoSpace`] only when the segment is
//! exactly as it was before the call; whether the *batch* can still be refused whole is for
//! [`PartitionLog::append`](super::log::PartitionLog::append) to decide.

use std::path::Path;
use std::sync::{Arc, LazyLock};

use booblik_protocol::{AckPolicy, encode_record, record_bytes};
use rustix::io::Errno;
use tracing::warn;

use super::config::WriteMode;
use super::durability::Durability;
use super::error::{IoContext, StorageError, is_no_space};
use super::index::{IndexEntry, SparseIndex};
use super::io::StorageIo;
use super::mapping::SegmentMapping;
use super::segment::{Segment, SegmentEnd, offset_after, segment_file_name};

/// MAPPED mode: how far ahead of the records a segment's disk blocks are reserved with
/// `fallocate`, at most. One call per this many bytes keeps the system call off almost every
/// append, and it is also the most disk an active segment holds beyond its records (released
/// when the segment is sealed).
pub(crate) const ALLOCATION_CHUNK_BYTES: u64 = 4 * 1024 * 1024;

/// MAPPED mode, FORCED batches: how far past a FORCED batch the file is written with zeros, at
/// most (within the reserved blocks), so the fsyncs that follow overwrite blocks that already
/// hold data instead of converting reserved ("unwritten") extents. A batch zeroes the next this
/// many bytes when its end comes within half of it of the zeroed end: one 256 KiB `pwrite` of
/// zeros per 256 KiB of FORCED records (the first at the first FORCED batch), and the next
/// fsync writes them out once.
///
/// Why: an `fdatasync` that covers the first write into a reserved block must also write the
/// extent tree that marks the block written. On the project's VMs (ext4, kernel 6.18) an fsync
/// after each 10 KiB append took 182–211 µs at p50, against 87–96 µs with the file zeroed ahead;
/// after 1.3 KiB appends 130–143 against 93–96 µs on average; after 128 B appends the same
/// (`docs/benchmarks.md` § Zeroing ahead of FORCED batches). 256 KiB and 1 MiB measured alike;
/// the smaller chunk keeps the one fsync that writes the zeros out shorter.
pub(crate) const ZERO_AHEAD_BYTES: u64 = 256 * 1024;

/// The zeros [`ZERO_AHEAD_BYTES`] writes: one buffer per process, allocated zeroed (and only ever
/// read), so its pages stay the kernel's shared zero page.
static ZEROS: LazyLock<Box<[u8]>> = LazyLock::new(|| vec![0; ZERO_AHEAD_BYTES as usize].into());

/// FILE mode: the scratch buffer a batch is encoded into is shrunk back to this many bytes
/// after a larger batch, so one 8 MiB batch does not pin 8 MiB per partition until the roll.
pub(crate) const SCRATCH_RETAINED_BYTES: usize = 1024 * 1024;

/// The segment the writer appends to.
#[derive(Debug)]
pub(crate) struct ActiveSegment {
    segment: Arc<Segment>,
    io: Arc<dyn StorageIo>,
    mapping: Option<SegmentMapping>,
    capacity_bytes: u64,
    written: SegmentEnd,
    /// MAPPED mode: the file's first `allocated_bytes` bytes have disk blocks (records written,
    /// or reserved with `fallocate`), so a store below it cannot fault for want of space.
    allocated_bytes: u64,
    /// MAPPED mode: false once the filesystem said it cannot `fallocate`; the segment is then
    /// written sparse, as before reservations existed.
    reserving: bool,
    /// MAPPED mode: how far the file has been written through the file rather than stored
    /// through the mapping: zeros ahead of a FORCED batch ([`ZERO_AHEAD_BYTES`]), or the records
    /// a resumed or trimmed segment starts from. Stores of WRITTEN batches into the mapping do
    /// not move it; [`ActiveSegment::zero_range`] never zeroes below the records' end anyway.
    zeroed_bytes: u64,
    synced_position: u32,
    /// True once sealed: no more writes.
    sealed: bool,
    /// FILE mode: a batch is encoded here, then written with one `pwrite`.
    scratch: Vec<u8>,
}

impl ActiveSegment {
    /// Creates a new, empty segment file for `base_offset` in `dir`. Nothing is made durable
    /// here: the caller makes the new file's pre-size and then its name durable
    /// ([`sync_new_segment`]) — at once when it opens a new log, on the sealing thread when a
    /// MAPPED roll creates it, so that no fsync holds the partition's appends.
    ///
    /// `NoSpace` when the filesystem has no room for the file (no free inode or directory
    /// block, a quota): no file is left behind, so the same call can be tried again later. (If
    /// removing a file that failed to pre-size or map fails too, the next try finds it there
    /// and fails with `EEXIST`, an I/O error that poisons.)
    pub(crate) fn create(
        dir: &Path,
        base_offset: i64,
        log_bytes_before: u64,
        mode: WriteMode,
        capacity_bytes: u64,
        index_interval_bytes: u32,
        durability: &Durability,
    ) -> Result<Self, StorageError> {
        let io = durability.io();
        let path = dir.join(segment_file_name(base_offset));
        let file = io.create_new(&path).map_err(|error| {
            StorageError::io_or_no_space(format!("creating segment {}", path.display()), error)
        })?;
        let segment = Arc::new(Segment::with_io(
            base_offset,
            log_bytes_before,
            path,
            file,
            SegmentEnd::default(),
            SparseIndex::new(index_interval_bytes),
            Arc::clone(io),
        ));
        Self::open_for_appends(Arc::clone(&segment), mode, capacity_bytes, durability)
            .inspect_err(|_| {
                // Pre-sizing or mapping failed: remove the empty file, or the next try to create
                // it would find it there (`create_new`). Nothing refers to it; the directory was
                // not fsynced since it appeared, so a crash may as well have lost it.
                if let Err(error) = io.remove_file(segment.path()) {
                    warn!(path = %segment.path().display(), %error, "could not remove a segment file that failed to open");
                }
            })
    }

    /// Continues appending to a recovered segment. In MAPPED mode the file is (re-)extended to
    /// `capacity_bytes` with zeros and mapped. Nothing is made durable here: the caller fsyncs
    /// the segment (its new size included) before the first append (`log.rs`,
    /// `make_recovered_durable`).
    ///
    /// Why the size must be durable: a MAPPED segment's seal runs after the next segment exists
    /// (`log.rs`, § The seal in the background), and recovery tells a seal that did not finish
    /// by the file's length — still the pre-size, not trimmed (`recovery.rs`, rule 3). A power
    /// loss must not bring the file back shorter, at whatever size its last fsync knew.
    pub(crate) fn resume(
        segment: Arc<Segment>,
        mode: WriteMode,
        capacity_bytes: u64,
        durability: &Durability,
    ) -> Result<Self, StorageError> {
        Self::open_for_appends(segment, mode, capacity_bytes, durability)
    }

    /// In MAPPED mode: pre-sizes the file to `capacity_bytes` if it is shorter (the new size
    /// not yet durable) and maps it.
    fn open_for_appends(
        segment: Arc<Segment>,
        mode: WriteMode,
        capacity_bytes: u64,
        durability: &Durability,
    ) -> Result<Self, StorageError> {
        let io = durability.io();
        let written = segment.end();
        let capacity_bytes = capacity_bytes.max(u64::from(written.position));
        let mapping = match mode {
            WriteMode::File => None,
            WriteMode::Mapped => {
                let file = segment.file();
                let len = file
                    .metadata()
                    .context(|| format!("stat of {}", segment.path().display()))?
                    .len();
                if len < capacity_bytes {
                    io.set_len(file, capacity_bytes).map_err(|error| {
                        StorageError::io_or_no_space(
                            format!(
                                "pre-sizing {} to {capacity_bytes} bytes",
                                segment.path().display()
                            ),
                            error,
                        )
                    })?;
                }
                Some(
                    SegmentMapping::map(file, capacity_bytes)
                        .context(|| format!("mapping {}", segment.path().display()))?,
                )
            }
        };
        let opened = Self {
            segment,
            io: Arc::clone(io),
            mapping,
            capacity_bytes,
            written,
            // A recovered segment's records have their blocks; what lies past them is unknown
            // (recovery cut the file, `set_len` re-extended it sparse), so reserve from there.
            allocated_bytes: u64::from(written.position),
            reserving: true,
            zeroed_bytes: u64::from(written.position),
            synced_position: written.position,
            sealed: false,
            scratch: Vec::new(),
        };
        Ok(opened)
    }

    /// The shared segment.
    pub(crate) fn segment(&self) -> &Arc<Segment> {
        &self.segment
    }

    /// True once [`ActiveSegment::seal`] ran: the segment takes no more writes.
    pub(crate) fn is_sealed(&self) -> bool {
        self.sealed
    }

    /// True when no record was ever written to this segment.
    pub(crate) fn is_empty(&self) -> bool {
        self.written.record_count == 0
    }

    /// Offset the next record will get.
    pub(crate) fn next_offset(&self) -> i64 {
        self.segment.next_offset_at(self.written)
    }

    /// Bytes of the partition's log up to the private write position.
    pub(crate) fn log_bytes_end(&self) -> u64 {
        self.segment.log_bytes_before() + u64::from(self.written.position)
    }

    /// Bytes still free for records.
    pub(crate) fn room_bytes(&self) -> u64 {
        self.capacity_bytes - u64::from(self.written.position)
    }

    /// True when `bytes` of records can be written here with nothing but a copy or a `pwrite`
    /// of the batch (MAPPED) or one `pwrite` (FILE): the segment is not sealed, the bytes fit its
    /// room (no roll), and in MAPPED mode their disk blocks are already reserved (no
    /// `fallocate`). What the inline append of [`Partition`](super::Partition) asks before it
    /// writes on a caller's thread. A FORCED batch in MAPPED mode may still zero ahead first, on
    /// that thread: once per 256 KiB of FORCED records ([`ZERO_AHEAD_BYTES`]). Sending those
    /// batches to the writer instead was tried: every first FORCED batch of a segment, and the
    /// batches pipelined behind it, then missed the inline path.
    pub(crate) fn takes_without_roll_or_reservation(&self, bytes: u64) -> bool {
        let end = u64::from(self.written.position) + bytes;
        !self.sealed
            && bytes <= self.room_bytes()
            && (self.mapping.is_none() || !self.reserving || end <= self.allocated_bytes)
    }

    /// Writes `payloads` (which the caller checked fit) after the last record and indexes them.
    /// Not yet visible to readers: see [`ActiveSegment::publish`]. `ack` is the batch's: in
    /// MAPPED mode a FORCED batch is written with `pwrite` instead of copied into the mapping
    /// (module docs, § FORCED batches in MAPPED mode).
    pub(crate) fn write(&mut self, payloads: &[&[u8]], ack: AckPolicy) -> Result<(), StorageError> {
        if self.sealed {
            return Err(StorageError::io(
                format!("writing {}", self.segment.path().display()),
                std::io::Error::other("the segment is sealed"),
            ));
        }
        let start = self.written;
        let next_offset = self.next_offset();
        if offset_after(next_offset, payloads.len() as u64).is_none() {
            // `PartitionLog::append` refuses such a batch before writing; this keeps the
            // invariant `next_offset` relies on even if a caller forgets.
            return Err(StorageError::OffsetOverflow {
                high_watermark: next_offset,
                records: payloads.len(),
            });
        }
        let mut entries = Vec::with_capacity(payloads.len());
        let mut position = start.position;
        for (n, payload) in payloads.iter().enumerate() {
            entries.push(IndexEntry {
                relative_offset: start.record_count + n as u32,
                position,
            });
            position += record_bytes(payload.len()) as u32;
        }
        let mapped = self.mapping.is_some();
        if mapped {
            // Before the first byte: a store into an unallocated page of a full disk is SIGBUS,
            // and a `pwrite` there could be short.
            self.reserve(u64::from(position))?;
        }
        if mapped && ack != AckPolicy::Forced {
            let mapping = self.mapping.as_mut().expect("checked above");
            debug_assert!(position as usize <= mapping.len());
            for (payload, entry) in payloads.iter().zip(&entries) {
                mapping
                    .write_record(&*self.io, entry.position as usize, payload)
                    .context(|| format!("writing {}", self.segment.path().display()))?;
            }
        } else {
            self.scratch.clear();
            for payload in payloads {
                encode_record(payload, &mut self.scratch);
            }
            let written = if mapped {
                self.zero_ahead(u64::from(start.position), u64::from(position))
                    .and_then(|()| self.write_length_last(u64::from(start.position)))
            } else {
                self.io.write_all_at(
                    self.segment.file(),
                    &self.scratch,
                    u64::from(start.position),
                )
            };
            // One large batch must not keep its buffer for the rest of the segment.
            if self.scratch.capacity() > SCRATCH_RETAINED_BYTES {
                self.scratch = Vec::with_capacity(SCRATCH_RETAINED_BYTES);
            }
            if let Err(source) = written {
                return Err(if mapped {
                    // The blocks were reserved (where the file system can reserve; where it
                    // cannot, a store would have met the same shortage with SIGBUS), so this is
                    // an I/O error, which poisons. The batch's first length is still zero unless
                    // the second write landed, so recovery cuts there.
                    StorageError::io(format!("writing {}", self.segment.path().display()), source)
                } else {
                    self.undo_file_write(start.position, source)
                });
            }
        }
        self.segment.extend_index(entries);
        self.written = SegmentEnd {
            record_count: start.record_count + payloads.len() as u32,
            position,
        };
        Ok(())
    }

    /// MAPPED mode, a FORCED batch: writes the encoded batch in the scratch buffer at
    /// `position` with its first record's length zero, then that length. Until the second write
    /// the batch reads as the zero length of unwritten space, so a process killed in between
    /// leaves what a store into the mapping leaves: a zero length, and recovery cuts there.
    fn write_length_last(&mut self, position: u64) -> std::io::Result<()> {
        let file = self.segment.file();
        let length: [u8; 4] = self.scratch[..4].try_into().expect("a record has a length");
        self.scratch[..4].fill(0);
        self.io.write_all_at(file, &self.scratch, position)?;
        self.io.write_all_at(file, &length, position)
    }

    /// MAPPED mode, a FORCED batch about to be written at `start..end`: when `end` comes within
    /// half of [`ZERO_AHEAD_BYTES`] of the zeroed end, writes zeros from `start` (or the zeroed
    /// end, if further) up to [`ZERO_AHEAD_BYTES`] on, within the reserved blocks. Only bytes at
    /// or past `start`, the end of the records, are written, so no record is ever overwritten;
    /// zeros past the records are what recovery reads as the end of the log anyway. Where the
    /// file system cannot reserve, nothing is zeroed (a write there would allocate the blocks
    /// the reservation exists to check).
    fn zero_ahead(&mut self, start: u64, end: u64) -> std::io::Result<()> {
        let Some((from, to)) = self.zero_range(start, end) else {
            return Ok(());
        };
        let len = usize::try_from(to - from).expect("at most ZERO_AHEAD_BYTES");
        self.io
            .write_all_at(self.segment.file(), &ZEROS[..len], from)?;
        self.zeroed_bytes = to;
        Ok(())
    }

    /// What [`ActiveSegment::zero_ahead`] would zero before a FORCED batch at `start..end`, if
    /// anything: MAPPED mode, where the file system reserves, once `end` comes within half of
    /// [`ZERO_AHEAD_BYTES`] of the zeroed end, and only where that reaches past the batch.
    fn zero_range(&self, start: u64, end: u64) -> Option<(u64, u64)> {
        if self.mapping.is_none()
            || !self.reserving
            || end.saturating_add(ZERO_AHEAD_BYTES / 2) <= self.zeroed_bytes
        {
            return None;
        }
        let from = self.zeroed_bytes.max(start);
        let to = from
            .saturating_add(ZERO_AHEAD_BYTES)
            .min(self.allocated_bytes);
        // Past `to <= from`: zeroed up to the reservation already. Past `to <= end`: nothing
        // beyond the batch itself is reserved yet (a nearly full disk, the end of the segment).
        (to > from.max(end)).then_some((from, to))
    }

    /// MAPPED mode: makes sure the file's blocks below `end` are allocated before records are
    /// copied there (see the module docs). Reserves up to [`ALLOCATION_CHUNK_BYTES`] ahead, within
    /// the capacity; when that much is not free, exactly what this write needs, so a nearly full
    /// disk is used to its last block. `NoSpace` when even that is not free: nothing was copied.
    fn reserve(&mut self, end: u64) -> Result<(), StorageError> {
        if end <= self.allocated_bytes || !self.reserving {
            return Ok(());
        }
        let from = self.allocated_bytes;
        let ahead = from
            .saturating_add(ALLOCATION_CHUNK_BYTES)
            .max(end)
            .min(self.capacity_bytes);
        let mut reserved = ahead;
        let mut result = self.io.allocate(self.segment.file(), from, ahead);
        if ahead > end && result.as_ref().is_err_and(is_no_space) {
            reserved = end;
            result = self.io.allocate(self.segment.file(), from, end);
        }
        match result {
            Ok(()) => {
                self.allocated_bytes = reserved;
                Ok(())
            }
            Err(error) if is_unsupported(&error) => {
                warn!(
                    path = %self.segment.path().display(),
                    %error,
                    "the filesystem cannot reserve disk space (fallocate); this segment is \
                     written sparse, and a full disk will kill the broker with SIGBUS"
                );
                self.reserving = false;
                Ok(())
            }
            Err(error) => Err(StorageError::io_or_no_space(
                format!(
                    "reserving bytes {from}..{reserved} of {}",
                    self.segment.path().display()
                ),
                error,
            )),
        }
    }

    /// FILE mode: the error for a failed `pwrite` of a batch at `position`. For want of space
    /// the call may have written part of the batch first (a short write, then `ENOSPC`), and a
    /// FILE segment's end on recovery is the file's end: a whole record left there would come
    /// back after a restart as if it had been appended. So the file is cut back to `position`
    /// and the cut fsynced; only when that works is the segment as it was (`NoSpace`, a refusal). Any other failure,
    /// or a failed cut, leaves unknown bytes past the end, which poisons.
    fn undo_file_write(&self, position: u32, source: std::io::Error) -> StorageError {
        let path = self.segment.path().display();
        if !is_no_space(&source) {
            return StorageError::io(format!("writing {path}"), source);
        }
        // The cut is fsynced too: where the short write's size reached the disk (no delayed
        // allocation), an unsynced cut could be undone by a power loss, bringing its bytes back.
        let file = self.segment.file();
        match self
            .io
            .set_len(file, u64::from(position))
            .and_then(|()| self.io.sync_data(file))
        {
            Ok(()) => StorageError::io_or_no_space(format!("writing {path}"), source),
            Err(cut) => StorageError::io(
                format!(
                    "writing {path} failed for want of space ({source}), then cutting it back \
                     to {position} bytes (and fsyncing the cut)"
                ),
                cut,
            ),
        }
    }

    /// Makes everything written so far visible to readers.
    pub(crate) fn publish(&self) {
        self.segment.publish_end(self.written);
    }

    /// Makes everything written so far durable: `msync` of the dirty range (MAPPED), then
    /// `fdatasync`. A no-op when nothing was written since the last sync.
    pub(crate) fn sync(&mut self, durability: &Durability) -> Result<(), StorageError> {
        let end = self.written.position;
        if end == self.synced_position {
            return Ok(());
        }
        if let Some(mapping) = &self.mapping {
            let from = self.synced_position as usize;
            self.io
                .flush_mapped(mapping.range(from, end as usize - from))
                .context(|| format!("msync of {}", self.segment.path().display()))?;
        }
        durability.sync_data(self.segment.file(), self.segment.path())?;
        self.synced_position = end;
        Ok(())
    }

    /// Stops appending to this segment and publishes its end: the first step of a seal, taken
    /// on the writer's thread when the rest of the seal runs on another (a MAPPED roll). The
    /// segment is then sealed as far as writers and readers can tell; [`ActiveSegment::seal`]
    /// finishes it.
    pub(crate) fn stop_writes(&mut self) {
        self.sealed = true;
        self.publish();
    }

    /// Ends appending to this segment (a roll, or closing): publishes, in MAPPED mode unmaps,
    /// syncs, and in MAPPED mode trims the file to the bytes written, so a sealed segment looks
    /// the same in both modes. Idempotent.
    ///
    /// The mapping goes *before* the fsync. Unmapping moves each page's dirty bit from the page
    /// table to the page cache, so the `fdatasync` still writes every record back; but a page
    /// written back while it is still mapped must first be write-protected in the page table,
    /// and on x86 that is a TLB flush on every CPU running the process — an interrupt per page,
    /// 131 072 of them for a 512 MiB segment of WRITTEN records. `munmap` flushes once for the
    /// whole range. (Readers never use the mapping: `mapping.rs`.) See `docs/storage.md` § The
    /// seal in the background.
    pub(crate) fn seal(&mut self, durability: &Durability) -> Result<(), StorageError> {
        self.stop_writes();
        let unmapped = self.mapping.take().is_some();
        self.sync(durability)?;
        if unmapped {
            // The mapping is gone, so shrinking the file cannot fault a mapped access. The trim
            // also releases the blocks reserved past the records.
            let len = self.written.position;
            self.io
                .set_len(self.segment.file(), u64::from(len))
                .context(|| format!("trimming {} to {len} bytes", self.segment.path().display()))?;
            // And the trim is made durable, so that after a power loss a segment still at its
            // pre-sized length is one whose seal did not finish (or whose records fill it
            // exactly): recovery judges damage there more leniently (`recovery.rs`, rule 3),
            // which a finished seal must not get. A metadata fsync, on the sealing thread.
            durability.sync_data(self.segment.file(), self.segment.path())?;
            self.allocated_bytes = u64::from(self.written.position);
            self.zeroed_bytes = self.allocated_bytes;
        }
        Ok(())
    }
}

/// Makes a segment that [`ActiveSegment::create`] made in `dir` durable: in MAPPED mode its
/// pre-size first, then its name. In this order so that the name never becomes durable through
/// this call before the length that recovery reads an unfinished seal by (`recovery.rs`, rule
/// 3; `resume` says why). A FILE segment's empty file has no size to make durable.
pub(crate) fn sync_new_segment(
    segment: &Segment,
    mode: WriteMode,
    dir: &Path,
    durability: &Durability,
) -> Result<(), StorageError> {
    if mode == WriteMode::Mapped {
        durability.sync_data(segment.file(), segment.path())?;
    }
    durability.sync_dir(dir)
}

/// True when the filesystem (or a sandbox filtering system calls) cannot `fallocate` at all.
fn is_unsupported(error: &std::io::Error) -> bool {
    error.raw_os_error().is_some_and(|code| {
        code == Errno::OPNOTSUPP.raw_os_error() || code == Errno::NOSYS.raw_os_error()
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{FileExt, MetadataExt};

    use super::*;
    use crate::storage::io::StorageIo;
    use crate::storage::metrics::PartitionMetrics;
    use crate::storage::test_io::{PowerLoss, SimIo};

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

    const INDEX_INTERVAL_BYTES: u32 = 4096;

    fn durability() -> Durability {
        Durability::new(sim(), Arc::new(PartitionMetrics::new("t", 0)))
    }

    fn create(dir: &Path, mode: WriteMode, capacity_bytes: u64) -> ActiveSegment {
        ActiveSegment::create(
            dir,
            0,
            0,
            mode,
            capacity_bytes,
            INDEX_INTERVAL_BYTES,
            &durability(),
        )
        .unwrap()
    }

    /// Bytes of disk the file really holds.
    fn disk_bytes(segment: &ActiveSegment) -> u64 {
        segment.segment().file().metadata().unwrap().blocks() * 512
    }

    fn file_len(segment: &ActiveSegment) -> u64 {
        segment.segment().file().metadata().unwrap().len()
    }

    /// The file's first `len` bytes, read through the file (not the mapping).
    fn file_head(segment: &ActiveSegment, len: usize) -> Vec<u8> {
        let mut head = vec![0u8; len];
        segment
            .segment()
            .file()
            .read_exact_at(&mut head, 0)
            .unwrap();
        head
    }

    #[test]
    fn a_mapped_segment_writes_a_forced_batch_with_pwrite_and_the_same_bytes_as_a_store() {
        let dir = tempfile::tempdir().unwrap();
        let mut active = create(dir.path(), WriteMode::Mapped, 4 * ALLOCATION_CHUNK_BYTES);
        let stores_before = sim_io().stores();
        active
            .write(&[&[7u8; 100], &[8u8; 20]], AckPolicy::Written)
            .unwrap();
        assert_eq!(
            sim_io().stores(),
            stores_before + 6,
            "three stores per record"
        );
        let calls_before = sim_io().calls();
        active
            .write(&[&[9u8; 50], &[10u8; 5000]], AckPolicy::Forced)
            .unwrap();
        assert_eq!(
            sim_io().stores(),
            stores_before + 6,
            "a FORCED batch stores nothing"
        );
        assert_eq!(
            sim_io().calls(),
            calls_before + 3,
            "zeros ahead, the batch with its first length zero, then that length"
        );
        // Both batches fell inside the chunk the first write reserved: no new reservation.
        assert_eq!(active.allocated_bytes, ALLOCATION_CHUNK_BYTES);
        let mut expected = Vec::new();
        for payload in [&[7u8; 100][..], &[8u8; 20], &[9u8; 50], &[10u8; 5000]] {
            encode_record(payload, &mut expected);
        }
        let on_disk = file_head(&active, expected.len() + 8);
        assert_eq!(
            &on_disk[..expected.len()],
            expected,
            "both paths wrote the same records"
        );
        assert_eq!(
            &on_disk[expected.len()..],
            [0u8; 8],
            "and nothing past them"
        );
        assert_eq!(u64::from(active.written.position), expected.len() as u64);
    }

    #[test]
    fn a_forced_batch_zeroes_the_file_ahead_of_itself_once_per_half_chunk_and_never_over_records() {
        let dir = tempfile::tempdir().unwrap();
        let mut active = create(dir.path(), WriteMode::Mapped, 4 * ALLOCATION_CHUNK_BYTES);
        // A WRITTEN batch first: its records are in the mapping, not yet on disk, and the
        // zeros must start after them.
        active.write(&[&[7u8; 100]], AckPolicy::Written).unwrap();
        let after_written = u64::from(active.written.position);
        assert_eq!(active.zeroed_bytes, 0, "a WRITTEN batch zeroes nothing");

        let payload = [9u8; 1000];
        let ten: [&[u8]; 10] = [&payload; 10];
        let batch = record_bytes(payload.len()) as u64 * 10;
        let calls_before = sim_io().calls();
        active.write(&ten, AckPolicy::Forced).unwrap();
        assert_eq!(sim_io().calls(), calls_before + 3, "zeros, batch, length");
        assert_eq!(active.zeroed_bytes, after_written + ZERO_AHEAD_BYTES);

        // The next batches fall inside the zeroed half: two calls each, until one ends within
        // half a chunk of the zeroed end, which zeroes on from there.
        let mut zeroings = 0;
        let mut batches = 1;
        while u64::from(active.written.position) < after_written + ZERO_AHEAD_BYTES {
            let zeroed_before = active.zeroed_bytes;
            let end = u64::from(active.written.position) + batch;
            let calls_before = sim_io().calls();
            active.write(&ten, AckPolicy::Forced).unwrap();
            batches += 1;
            if end + ZERO_AHEAD_BYTES / 2 > zeroed_before {
                assert_eq!(sim_io().calls(), calls_before + 3);
                assert_eq!(active.zeroed_bytes, zeroed_before + ZERO_AHEAD_BYTES);
                zeroings += 1;
            } else {
                assert_eq!(sim_io().calls(), calls_before + 2);
                assert_eq!(active.zeroed_bytes, zeroed_before);
            }
        }
        assert!(
            zeroings >= 1,
            "crossing the first zeroed chunk zeroes again"
        );
        assert!(
            zeroings < batches / 4,
            "{zeroings} zeroings for {batches} batches: zeroing is not per batch"
        );

        // Every record reads back: no zeros landed on one.
        let mut expected = Vec::new();
        encode_record(&[7u8; 100], &mut expected);
        for _ in 0..batches * 10 {
            encode_record(&payload, &mut expected);
        }
        let on_disk = file_head(&active, expected.len());
        assert!(on_disk == expected, "the records survive the zeroing");
        assert!(
            active.zeroed_bytes <= active.allocated_bytes,
            "zeros only land in reserved blocks"
        );
    }

    #[test]
    fn zeroing_ahead_stops_at_the_reservation() {
        let dir = tempfile::tempdir().unwrap();
        // A segment smaller than one zeroing chunk: its reservation is the whole capacity.
        let capacity = 64 * 1024;
        let mut active = create(dir.path(), WriteMode::Mapped, capacity);
        active.write(&[&[9u8; 1000]], AckPolicy::Forced).unwrap();
        assert_eq!(active.allocated_bytes, capacity);
        assert_eq!(
            active.zeroed_bytes, capacity,
            "zeroed up to the reservation, not past it"
        );
        assert_eq!(file_len(&active), capacity, "the file did not grow");
        let calls_before = sim_io().calls();
        active.write(&[&[9u8; 1000]], AckPolicy::Forced).unwrap();
        assert_eq!(
            sim_io().calls(),
            calls_before + 2,
            "zeroed to the reservation: no zero-length write"
        );
    }

    #[test]
    fn a_mapped_write_reserves_a_chunk_ahead_and_sealing_releases_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let mut active = create(dir.path(), WriteMode::Mapped, 4 * ALLOCATION_CHUNK_BYTES);
        assert_eq!(disk_bytes(&active), 0, "a new segment is sparse");
        active.write(&[&[7u8; 100]], AckPolicy::Written).unwrap();
        assert_eq!(active.allocated_bytes, ALLOCATION_CHUNK_BYTES);
        assert!(disk_bytes(&active) >= ALLOCATION_CHUNK_BYTES);
        // Writes inside the reservation make no new one.
        active.write(&[&[8u8; 1000]], AckPolicy::Written).unwrap();
        assert_eq!(active.allocated_bytes, ALLOCATION_CHUNK_BYTES);
        active.seal(&durability()).unwrap();
        let written = u64::from(active.written.position);
        assert_eq!(file_len(&active), written);
        assert!(
            disk_bytes(&active) < 64 * 1024,
            "sealing keeps {} bytes of disk for {written} bytes of records",
            disk_bytes(&active)
        );
    }

    #[test]
    fn a_large_file_batch_does_not_keep_its_scratch_buffer() {
        let dir = tempfile::tempdir().unwrap();
        let mut active = create(dir.path(), WriteMode::File, 8 * 1024 * 1024);
        active
            .write(
                &[&vec![1u8; 2 * SCRATCH_RETAINED_BYTES]],
                AckPolicy::Written,
            )
            .unwrap();
        assert!(
            active.scratch.capacity() <= SCRATCH_RETAINED_BYTES,
            "{} bytes of scratch kept after a large batch",
            active.scratch.capacity()
        );
        active.write(&[&[2u8; 100]], AckPolicy::Written).unwrap();
        assert!(active.scratch.capacity() <= SCRATCH_RETAINED_BYTES);
        assert_eq!(active.written.record_count, 2);
    }

    #[test]
    fn a_reservation_never_passes_the_segment_capacity() {
        let dir = tempfile::tempdir().unwrap();
        let capacity = 64 * 1024;
        let mut active = create(dir.path(), WriteMode::Mapped, capacity);
        active.write(&[&[7u8; 100]], AckPolicy::Written).unwrap();
        assert_eq!(active.allocated_bytes, capacity);
        assert_eq!(
            file_len(&active),
            capacity,
            "fallocate must not grow the file"
        );
    }

    #[test]
    fn a_resumed_segment_reserves_from_its_records_on() {
        let dir = tempfile::tempdir().unwrap();
        let mut active = create(dir.path(), WriteMode::Mapped, 4 * ALLOCATION_CHUNK_BYTES);
        active
            .write(&[&[7u8; 100], &[8u8; 200]], AckPolicy::Written)
            .unwrap();
        active.publish();
        let segment = Arc::clone(active.segment());
        drop(active);
        let mut resumed = ActiveSegment::resume(
            segment,
            WriteMode::Mapped,
            4 * ALLOCATION_CHUNK_BYTES,
            &durability(),
        )
        .unwrap();
        let records = u64::from(resumed.written.position);
        assert_eq!(resumed.allocated_bytes, records);
        resumed.write(&[&[9u8; 10]], AckPolicy::Written).unwrap();
        assert_eq!(resumed.allocated_bytes, records + ALLOCATION_CHUNK_BYTES);
    }

    #[test]
    fn without_room_for_a_chunk_a_mapped_write_reserves_just_what_it_needs() {
        // A FORCED batch too: its `pwrite` lands in the blocks just reserved and needs no more.
        for ack in [AckPolicy::Written, AckPolicy::Forced] {
            let dir = tempfile::tempdir().unwrap();
            let mut active = create(dir.path(), WriteMode::Mapped, 4 * ALLOCATION_CHUNK_BYTES);
            let needed = record_bytes(100) as u64;
            sim_io().set_free_bytes(Some(needed));
            let written = active.write(&[&[7u8; 100]], ack);
            sim_io().set_free_bytes(None);
            written.unwrap_or_else(|error| panic!("{ack:?}: {error}"));
            assert_eq!(active.allocated_bytes, needed, "{ack:?}");
        }
    }

    #[test]
    fn a_mapped_write_without_room_is_refused_before_anything_is_copied() {
        let dir = tempfile::tempdir().unwrap();
        let mut active = create(dir.path(), WriteMode::Mapped, 4 * ALLOCATION_CHUNK_BYTES);
        active.write(&[&[7u8; 100]], AckPolicy::Written).unwrap();
        // Past the first chunk, with nothing free.
        let before = active.written;
        let big = vec![5u8; ALLOCATION_CHUNK_BYTES as usize];
        sim_io().set_free_bytes(Some(0));
        let refused = active.write(&[&big], AckPolicy::Written);
        sim_io().set_free_bytes(None);
        let error = refused.unwrap_err();
        assert!(matches!(error, StorageError::NoSpace { .. }), "{error}");
        assert_eq!(active.written, before);
        let mut length = [0u8; 4];
        active
            .segment()
            .file()
            .read_exact_at(&mut length, u64::from(before.position))
            .unwrap();
        assert_eq!(length, [0; 4], "nothing was copied past the records");
        // Space is back: the same record goes where the refused one would have.
        active.write(&[&big], AckPolicy::Written).unwrap();
        assert_eq!(active.written.record_count, 2);
    }

    #[test]
    fn a_file_write_cut_short_by_a_full_disk_is_cut_back_and_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut active = create(dir.path(), WriteMode::File, 1024 * 1024);
        active.write(&[&[7u8; 100]], AckPolicy::Written).unwrap();
        let before = active.written;
        // Room for the first record of the batch and part of the second: a short write.
        sim_io().set_free_bytes(Some(record_bytes(50) as u64 + 20));
        let refused = active.write(&[&[1u8; 50], &[2u8; 50]], AckPolicy::Written);
        sim_io().set_free_bytes(None);
        let error = refused.unwrap_err();
        assert!(matches!(error, StorageError::NoSpace { .. }), "{error}");
        assert_eq!(active.written, before);
        assert_eq!(
            file_len(&active),
            u64::from(before.position),
            "no byte of the refused batch may stay in the file"
        );
        active.write(&[&[3u8; 30]], AckPolicy::Written).unwrap();
        assert_eq!(
            file_len(&active),
            u64::from(before.position) + record_bytes(30) as u64
        );
    }

    #[test]
    fn a_sealed_mapped_segment_keeps_its_trim_through_a_power_loss() {
        // Recovery tells an unfinished seal by the pre-sized length, so a finished seal's trim
        // must reach the disk with the seal.
        let dir = tempfile::tempdir().unwrap();
        let sim = Arc::new(SimIo::with_power_loss());
        let durability = Durability::new(
            Arc::clone(&sim) as Arc<dyn StorageIo>,
            Arc::new(PartitionMetrics::new("t", 0)),
        );
        let capacity = 64 * 1024;
        let mut active = ActiveSegment::create(
            dir.path(),
            0,
            0,
            WriteMode::Mapped,
            capacity,
            INDEX_INTERVAL_BYTES,
            &durability,
        )
        .unwrap();
        sync_new_segment(active.segment(), WriteMode::Mapped, dir.path(), &durability).unwrap();
        active
            .write(&[&[7u8; 100], &[8u8; 20]], AckPolicy::Written)
            .unwrap();
        active.seal(&durability).unwrap();
        let path = active.segment().path().to_path_buf();
        let written = u64::from(active.written.position);
        sim.crash_now().unwrap();
        drop(active);
        sim.power_loss(PowerLoss::DurableOnly).unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            written,
            "the sealed segment came back at its pre-sized length"
        );
    }
}
