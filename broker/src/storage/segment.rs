//! One segment file as every thread sees it: the file, where its records end, its sparse index,
//! and its deletion.
//!
//! A segment is shared through `Arc<Segment>`: the partition's segment list holds one reference,
//! the writer holds one while the segment is active, and every [`ReadSlice`](super::ReadSlice)
//! holds one while its bytes are being sent. That last reference is the *pin*: retention removes
//! a segment from the list and renames its file to `<name>.deleted` at once, but the file is
//! unlinked only when the last `Arc` is dropped, so a reader never loses the bytes it is sending.
//! That last drop is often a runtime thread (a session finishing a FETCH), where a blocking
//! `unlink` would hold up every session on it, so inside a tokio runtime the unlink goes to the
//! blocking pool; elsewhere (the writer thread, a test) it runs in place. A runtime that shuts
//! down before running it leaves the `.deleted` file, which recovery removes on the next start.
//!
//! Readers learn how much of the segment is written from [`Segment::end`], which the writer
//! publishes after the bytes are in place (release/acquire). The record count and the byte
//! position are packed in one `AtomicU64`, so a reader always gets a matching pair.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use booblik_protocol::RECORD_HEADER_BYTES;
use tracing::{debug, warn};

use super::error::{IoContext, StorageError};
use super::index::{IndexEntry, SparseIndex};
use super::io::StorageIo;

/// Extension of a live segment file.
pub(crate) const SEGMENT_SUFFIX: &str = ".log";
/// Extension added to a segment file that retention removed while a reader still pinned it.
pub(crate) const DELETED_SUFFIX: &str = ".deleted";
/// Bytes read at a time while walking length prefixes forward from an index entry.
const SCAN_CHUNK_BYTES: usize = 8 * 1024;

/// `%020d.log`: the file name of the segment whose first record has `base_offset`.
pub(crate) fn segment_file_name(base_offset: i64) -> String {
    format!("{base_offset:020}{SEGMENT_SUFFIX}")
}

/// What a file name says about the file, for recovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SegmentFileName {
    /// `%020d.log` naming an offset: the segment whose first record has this offset.
    Segment(i64),
    /// `%020d.log` whose twenty digits are above `i64::MAX`: no offset can be that large.
    OutOfRange,
    /// Anything else.
    Other,
}

/// Reads a file name as a segment file name (`%020d.log`).
pub(crate) fn parse_segment_file_name(name: &str) -> SegmentFileName {
    let Some(digits) = name.strip_suffix(SEGMENT_SUFFIX) else {
        return SegmentFileName::Other;
    };
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return SegmentFileName::Other;
    }
    // Twenty digits are all ASCII digits, so the only failure left is a value above i64::MAX.
    digits
        .parse()
        .map_or(SegmentFileName::OutOfRange, SegmentFileName::Segment)
}

/// The offset `records` records after `offset`, or `None` when it would pass `i64::MAX`. Every
/// offset sum goes through here: offsets come from file names and client batches, so an
/// overflow is an input to refuse, never arithmetic to trust.
pub(crate) fn offset_after(offset: i64, records: u64) -> Option<i64> {
    offset.checked_add(i64::try_from(records).ok()?)
}

/// How far a segment is written: `record_count` records ending at byte `position`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct SegmentEnd {
    /// Records in the segment.
    pub(crate) record_count: u32,
    /// Bytes they occupy (the position where the next record goes).
    pub(crate) position: u32,
}

impl SegmentEnd {
    fn pack(self) -> u64 {
        (u64::from(self.record_count) << 32) | u64::from(self.position)
    }

    fn unpack(packed: u64) -> Self {
        Self {
            record_count: (packed >> 32) as u32,
            position: packed as u32,
        }
    }
}

/// A segment file shared by the writer, the partition's segment list and pinned readers.
#[derive(Debug)]
pub(crate) struct Segment {
    base_offset: i64,
    /// Bytes of the partition's log before this segment, counted since the partition was
    /// opened. Lets a long poll measure "bytes past an offset" across segments.
    log_bytes_before: u64,
    path: PathBuf,
    file: File,
    end: AtomicU64,
    index: RwLock<SparseIndex>,
    /// Set when retention removed the segment: the path to unlink when the last pin drops.
    retired_path: OnceLock<PathBuf>,
    /// What renames and unlinks the file.
    io: Arc<dyn StorageIo>,
}

impl Segment {
    /// [`Segment::with_io`] over the real file system, for unit tests of the read path.
    #[cfg(test)]
    pub(crate) fn new(
        base_offset: i64,
        log_bytes_before: u64,
        path: PathBuf,
        file: File,
        end: SegmentEnd,
        index: SparseIndex,
    ) -> Self {
        let io = Arc::new(super::io::RealIo);
        Self::with_io(base_offset, log_bytes_before, path, file, end, index, io)
    }

    /// A segment over an open file whose first `end` bytes are valid records, indexed by
    /// `index`; `io` renames and unlinks it when retention retires it.
    pub(crate) fn with_io(
        base_offset: i64,
        log_bytes_before: u64,
        path: PathBuf,
        file: File,
        end: SegmentEnd,
        index: SparseIndex,
        io: Arc<dyn StorageIo>,
    ) -> Self {
        Self {
            base_offset,
            log_bytes_before,
            path,
            file,
            end: AtomicU64::new(end.pack()),
            index: RwLock::new(index),
            retired_path: OnceLock::new(),
            io,
        }
    }

    /// Offset of the segment's first record.
    pub(crate) fn base_offset(&self) -> i64 {
        self.base_offset
    }

    /// Bytes of the log before this segment (since the partition was opened).
    pub(crate) fn log_bytes_before(&self) -> u64 {
        self.log_bytes_before
    }

    /// The segment file's path (as created; see [`Segment::retire`]).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The open file: readers `pread` it, the server `sendfile`s from it, FILE mode `pwrite`s it.
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// How far the segment is written, as last published by the writer.
    pub(crate) fn end(&self) -> SegmentEnd {
        SegmentEnd::unpack(self.end.load(Ordering::Acquire))
    }

    /// Offset the next record appended to this segment would get.
    pub(crate) fn next_offset(&self) -> i64 {
        self.next_offset_at(self.end())
    }

    /// Offset after the records of `end` (an end of this segment).
    pub(crate) fn next_offset_at(&self, end: SegmentEnd) -> i64 {
        // Recovery refuses a segment whose records would pass i64::MAX, and the writer refuses
        // a batch that would, so every published end has a next offset.
        offset_after(self.base_offset, u64::from(end.record_count))
            .expect("recovery and the writer keep a segment's offsets within i64")
    }

    /// Makes `end` visible to readers. Writer only, after the bytes and index entries are in place.
    /// Ends only move forward: a record never disappears from a published segment.
    pub(crate) fn publish_end(&self, end: SegmentEnd) {
        let previous = SegmentEnd::unpack(self.end.swap(end.pack(), Ordering::Release));
        debug_assert!(
            end.record_count >= previous.record_count && end.position >= previous.position,
            "published end {end:?} of {} is behind {previous:?}",
            self.path.display()
        );
    }

    /// Adds index entries for records the writer just wrote.
    pub(crate) fn extend_index(&self, records: impl IntoIterator<Item = IndexEntry>) {
        let mut index = self
            .index
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for entry in records {
            index.on_record(entry.relative_offset, entry.position);
        }
    }

    /// Number of sparse index entries (for tests and stats).
    pub(crate) fn index_len(&self) -> usize {
        self.index
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// Byte position of the record with `offset`, which must lie in
    /// `[base_offset, base_offset + end.record_count]` (the upper bound gives `end.position`).
    /// Binary search in the sparse index, then a forward walk over length prefixes (at most one
    /// index interval of bytes).
    pub(crate) fn position_of(&self, offset: i64, end: SegmentEnd) -> Result<u32, StorageError> {
        Ok(self
            .walk_to(offset, end, DiskWait::Allowed)?
            .expect("a walk that may wait for the disk always ends"))
    }

    /// [`Segment::position_of`] without waiting for the disk: `None` when the walk needs bytes
    /// the page cache does not hold (or the filesystem cannot tell), for a caller that must not
    /// sleep on a disk read (a runtime thread) and does the walk elsewhere.
    pub(crate) fn cached_position_of(
        &self,
        offset: i64,
        end: SegmentEnd,
    ) -> Result<Option<u32>, StorageError> {
        self.walk_to(offset, end, DiskWait::Never)
    }

    fn walk_to(
        &self,
        offset: i64,
        end: SegmentEnd,
        wait: DiskWait,
    ) -> Result<Option<u32>, StorageError> {
        let relative = offset
            .checked_sub(self.base_offset)
            .and_then(|relative| u32::try_from(relative).ok());
        let relative = match relative {
            Some(r) if r <= end.record_count => r,
            _ => {
                return Err(self.corrupt(
                    0,
                    format!(
                        "offset {offset} is not in this segment ({} records from {})",
                        end.record_count, self.base_offset
                    ),
                ));
            }
        };
        if relative == end.record_count {
            return Ok(Some(end.position));
        }
        let start = self
            .index
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .floor(relative);
        let mut current = start.relative_offset;
        let mut position = u64::from(start.position);
        let limit = u64::from(end.position);
        let mut chunk = [0u8; SCAN_CHUNK_BYTES];
        let mut chunk_start = 0u64;
        let mut chunk_len = 0usize;
        while current < relative {
            let header_in_chunk =
                position >= chunk_start && position + 4 <= chunk_start + chunk_len as u64;
            if !header_in_chunk {
                let want = (SCAN_CHUNK_BYTES as u64).min(limit.saturating_sub(position)) as usize;
                if want < 4 {
                    return Err(self.corrupt(position, "length prefix runs past the end".into()));
                }
                match wait {
                    DiskWait::Allowed => self
                        .file
                        .read_exact_at(&mut chunk[..want], position)
                        .context(|| format!("reading {}", self.path.display()))?,
                    DiskWait::Never => {
                        if self.read_cached_at(&mut chunk[..want], position)? != Some(want) {
                            return Ok(None);
                        }
                    }
                }
                chunk_start = position;
                chunk_len = want;
            }
            let at = (position - chunk_start) as usize;
            let len = i32::from_be_bytes([chunk[at], chunk[at + 1], chunk[at + 2], chunk[at + 3]]);
            let next = position + RECORD_HEADER_BYTES as u64 + u64::from(len.unsigned_abs());
            if len <= 0 || next > limit {
                return Err(self.corrupt(position, format!("invalid record length {len}")));
            }
            position = next;
            current += 1;
        }
        Ok(Some(position as u32))
    }

    /// Reads into `buf`, from `position`, as many bytes as the page cache holds without waiting
    /// for the disk (`preadv2` with `RWF_NOWAIT`) and returns how many: `buf.len()`, or fewer
    /// when the page after them is not cached. `None` when the filesystem cannot read without
    /// waiting: it cannot tell.
    pub(crate) fn read_cached_at(
        &self,
        buf: &mut [u8],
        position: u64,
    ) -> Result<Option<usize>, StorageError> {
        let mut done = 0;
        while done < buf.len() {
            let at = position + done as u64;
            match read_without_waiting(&self.file, &mut buf[done..], at) {
                Ok(0) => {
                    return Err(self.corrupt(at, "the file ends before its published end".into()));
                }
                Ok(n) => done += n,
                Err(CacheMiss::NotCached) => break,
                Err(CacheMiss::CannotTell) => return Ok(None),
                Err(CacheMiss::Io(error)) => {
                    return Err(StorageError::io(
                        format!("reading {} at byte {at}", self.path.display()),
                        error,
                    ));
                }
            }
        }
        Ok(Some(done))
    }

    /// Copies `buf.len()` bytes at `position` (a heap read: `ReadSlice::read_into` and `ReadSlice::to_bytes`).
    pub(crate) fn read_exact_at(&self, buf: &mut [u8], position: u64) -> Result<(), StorageError> {
        self.file
            .read_exact_at(buf, position)
            .context(|| format!("reading {} at byte {position}", self.path.display()))
    }

    /// Retention removed this segment: rename the file to `<name>.deleted` now, so a restart no
    /// longer counts it as part of the log, and unlink it when the last pin is dropped.
    pub(crate) fn retire(&self) -> Result<(), StorageError> {
        let mut retired = self.path.clone().into_os_string();
        retired.push(DELETED_SUFFIX);
        let retired = PathBuf::from(retired);
        let renamed = self.io.rename(&self.path, &retired);
        // Unlink whichever name the file has when the last pin drops.
        let unlink = if renamed.is_ok() {
            retired
        } else {
            self.path.clone()
        };
        let _ = self.retired_path.set(unlink);
        renamed.context(|| format!("renaming retired segment {}", self.path.display()))
    }

    fn corrupt(&self, position: u64, reason: String) -> StorageError {
        StorageError::Corrupt {
            path: self.path.clone(),
            position,
            reason,
        }
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        let Some(path) = self.retired_path.take() else {
            return;
        };
        let io = Arc::clone(&self.io);
        let unlink = move || match io.remove_file(&path) {
            Ok(()) => debug!(path = %path.display(), "unlinked retired segment"),
            Err(error) => {
                warn!(path = %path.display(), %error, "could not unlink retired segment");
            }
        };
        // Not on a runtime thread: see the module docs.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(unlink)),
            Err(_) => unlink(),
        }
    }
}

/// Whether a read may wait for the disk.
#[derive(Debug, Clone, Copy)]
enum DiskWait {
    Allowed,
    /// Only what the page cache holds (`RWF_NOWAIT`).
    Never,
}

/// Why [`read_without_waiting`] read nothing.
enum CacheMiss {
    /// The page at the position is not in the page cache (`EAGAIN`; on some filesystems, such
    /// as XFS, also while a write holds the file's lock).
    NotCached,
    /// The filesystem cannot read without waiting (`EOPNOTSUPP`), or the kernel predates
    /// `preadv2` (`ENOSYS`).
    CannotTell,
    /// Any other failure.
    Io(std::io::Error),
}

/// `preadv2(file, buf, position, RWF_NOWAIT)`: reads only what the page cache holds instead of
/// waiting for the disk (a miss still starts readahead, whose submission can take a moment).
/// Retried when a signal interrupts it.
fn read_without_waiting(file: &File, buf: &mut [u8], position: u64) -> Result<usize, CacheMiss> {
    use rustix::io::{Errno, ReadWriteFlags};
    loop {
        match rustix::io::preadv2(
            file,
            &mut [std::io::IoSliceMut::new(buf)],
            position,
            ReadWriteFlags::NOWAIT,
        ) {
            Ok(n) => return Ok(n),
            Err(Errno::INTR) => {}
            Err(Errno::AGAIN) => return Err(CacheMiss::NotCached),
            Err(Errno::OPNOTSUPP | Errno::NOSYS) => return Err(CacheMiss::CannotTell),
            Err(error) => return Err(CacheMiss::Io(error.into())),
        }
    }
}

/// Tests: switches readahead off for `file` (a miss then reads only what it asked for) and drops
/// its pages from the page cache, so a test decides which pages are cached. The pages must be
/// clean (written and fsynced). `POSIX_FADV_DONTNEED` skips a page that is busy at that moment —
/// seen while other writes flood the same disk — so it is issued a few times.
#[cfg(test)]
pub(crate) fn evict_from_page_cache(file: &File) {
    use rustix::fs::{Advice, fadvise};
    fadvise(file, 0, None, Advice::Random).expect("fadvise(RANDOM)");
    for _ in 0..5 {
        fadvise(file, 0, None, Advice::DontNeed).expect("fadvise(DONTNEED)");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_files_are_named_by_their_base_offset_in_twenty_digits() {
        assert_eq!(segment_file_name(0), "00000000000000000000.log");
        assert_eq!(segment_file_name(4321), "00000000000000004321.log");
        assert_eq!(
            parse_segment_file_name("00000000000000004321.log"),
            SegmentFileName::Segment(4321)
        );
        assert_eq!(parse_segment_file_name("4321.log"), SegmentFileName::Other);
        assert_eq!(
            parse_segment_file_name("00000000000000004321.log.deleted"),
            SegmentFileName::Other
        );
        assert_eq!(
            parse_segment_file_name("0000000000000000432x.log"),
            SegmentFileName::Other
        );
    }

    #[test]
    fn a_segment_name_above_the_largest_offset_is_out_of_range() {
        assert_eq!(
            parse_segment_file_name("09223372036854775807.log"),
            SegmentFileName::Segment(i64::MAX)
        );
        assert_eq!(
            parse_segment_file_name("09223372036854775808.log"),
            SegmentFileName::OutOfRange
        );
        assert_eq!(
            parse_segment_file_name("99999999999999999999.log"),
            SegmentFileName::OutOfRange
        );
    }

    #[test]
    fn offset_sums_past_the_largest_offset_are_none() {
        assert_eq!(offset_after(5, 3), Some(8));
        assert_eq!(offset_after(i64::MAX - 2, 2), Some(i64::MAX));
        assert_eq!(offset_after(i64::MAX - 2, 3), None);
        assert_eq!(offset_after(0, u64::MAX), None);
    }

    #[test]
    fn the_published_end_packs_count_and_position_together() {
        let end = SegmentEnd {
            record_count: 7,
            position: u32::MAX - 1,
        };
        assert_eq!(SegmentEnd::unpack(end.pack()), end);
    }
}
