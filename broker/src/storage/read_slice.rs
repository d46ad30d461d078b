//! A range of raw segment bytes handed to a FETCH, pinning its segment while it lives.

use std::fs::File;
use std::sync::Arc;

use bytes::Bytes;

use super::error::StorageError;
use super::segment::Segment;

/// [`ReadSlice::is_cached`] reads one byte every this many bytes of the slice (and its last
/// byte): at most 17 probes for the largest FETCH (8 MiB), one or two for the small FETCHes of a
/// follower. A page evicted between two probes goes unnoticed; see [`ReadSlice::is_cached`].
pub const CACHE_PROBE_STRIDE_BYTES: u64 = 512 * 1024;

/// The smallest page size on Linux: two bytes in the same 4 KiB page are in the same page of
/// the page cache, whatever its page size, so one probe answers for both.
const PROBE_PAGE_BYTES: u64 = 4096;

/// `len` bytes of one segment file from `position`: whole records from the fetch offset, possibly
/// ending in the middle of one, never crossing into the next segment.
///
/// The slice holds an `Arc` to its segment, so retention cannot unlink the file until the slice
/// is dropped: the server sends the bytes (`sendfile` from [`ReadSlice::file`] at
/// [`ReadSlice::position`]) or copies them into a buffer, and then drops the slice.
pub struct ReadSlice {
    segment: Arc<Segment>,
    position: u64,
    len: u32,
    high_watermark: i64,
}

impl std::fmt::Debug for ReadSlice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadSlice")
            .field("segment", &self.segment.path())
            .field("position", &self.position)
            .field("len", &self.len)
            .field("high_watermark", &self.high_watermark)
            .finish()
    }
}

impl ReadSlice {
    pub(crate) fn new(segment: Arc<Segment>, position: u64, len: u32, high_watermark: i64) -> Self {
        Self {
            segment,
            position,
            len,
            high_watermark,
        }
    }

    /// The partition's high watermark when the slice was cut; at least one past every record
    /// that starts in the slice.
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }

    /// The segment file to send from.
    pub fn file(&self) -> &File {
        self.segment.file()
    }

    /// Byte position of the slice in [`ReadSlice::file`].
    pub fn position(&self) -> u64 {
        self.position
    }

    /// Bytes in the slice.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// True for the empty slice returned at the high watermark.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Base offset of the segment the slice lies in.
    pub fn segment_base_offset(&self) -> i64 {
        self.segment.base_offset()
    }

    /// Reads the slice's bytes into `buf` (`pread`) and returns them: the heap FETCH mode, with a
    /// buffer its session reuses. `buf` only grows, and only the growth is zero-filled, so a
    /// session that keeps fetching pays neither an allocation nor a memset per FETCH.
    pub fn read_into<'b>(&self, buf: &'b mut Vec<u8>) -> Result<&'b [u8], StorageError> {
        self.read_rest_into(buf, 0)?;
        Ok(&buf[..self.len as usize])
    }

    /// Reads into `buf` as much of the slice, from its start, as the page cache holds, without
    /// waiting for the disk (`preadv2` with `RWF_NOWAIT`), and returns how many bytes that was:
    /// all of them (`len`), or fewer when the page after them is not cached. `None` when the
    /// filesystem cannot read without waiting (`EOPNOTSUPP`): it cannot tell. `buf` is sized as
    /// in [`ReadSlice::read_into`]; [`ReadSlice::read_rest_into`] reads what is left.
    ///
    /// Why: the heap FETCH copies the bytes on a runtime thread, which must not sleep on a disk
    /// read while other sessions wait for that thread. A cached read is a memory copy.
    pub fn read_cached_into(&self, buf: &mut Vec<u8>) -> Result<Option<usize>, StorageError> {
        let bytes = self.sized(buf);
        self.segment.read_cached_at(bytes, self.position)
    }

    /// [`ReadSlice::read_cached_into`] into `dst`, which must be exactly [`ReadSlice::len`]
    /// bytes long: a server copies a small payload straight behind its answer's header.
    pub fn read_cached_to(&self, dst: &mut [u8]) -> Result<Option<usize>, StorageError> {
        assert_eq!(
            dst.len(),
            self.len as usize,
            "dst must hold exactly the slice"
        );
        self.segment.read_cached_at(dst, self.position)
    }

    /// Reads bytes `from..len` of the slice into `buf[from..len]` (`pread`, waiting for the
    /// disk if it must): the rest after [`ReadSlice::read_cached_into`]. Blocks; a server calls
    /// it off its runtime threads.
    pub fn read_rest_into(&self, buf: &mut Vec<u8>, from: usize) -> Result<(), StorageError> {
        let bytes = self.sized(buf);
        if from < bytes.len() {
            self.segment
                .read_exact_at(&mut bytes[from..], self.position + from as u64)?;
        }
        Ok(())
    }

    /// Whether the page cache holds the slice, as far as reading one byte every
    /// [`CACHE_PROBE_STRIDE_BYTES`] and the last byte without waiting (`RWF_NOWAIT`) can tell:
    /// `Some(false)` when a probe missed, `None` when the filesystem cannot tell. For the
    /// zero-copy FETCH, whose `sendfile` would otherwise sleep on the disk on a runtime thread.
    /// A probe cannot see every page: a page evicted between two probes still makes `sendfile`
    /// wait for the disk (as every `sendfile` did before the probe), but a replay of a log that
    /// has left the cache — the case that matters — misses at its first probe.
    pub fn is_cached(&self) -> Result<Option<bool>, StorageError> {
        let len = u64::from(self.len);
        if len == 0 {
            return Ok(Some(true));
        }
        let last = self.position + len - 1;
        let last_strided =
            self.position + (len - 1) / CACHE_PROBE_STRIDE_BYTES * CACHE_PROBE_STRIDE_BYTES;
        // The last byte needs a probe of its own only outside the page of the probe before it
        // (a follower's small FETCH: one system call, not two).
        let last_probe =
            (last / PROBE_PAGE_BYTES != last_strided / PROBE_PAGE_BYTES).then_some(last);
        let probes = (self.position..=last)
            .step_by(CACHE_PROBE_STRIDE_BYTES as usize)
            .chain(last_probe);
        let mut byte = [0u8; 1];
        for position in probes {
            match self.segment.read_cached_at(&mut byte, position)? {
                Some(1) => {}
                Some(_) => return Ok(Some(false)),
                None => return Ok(None),
            }
        }
        Ok(Some(true))
    }

    /// `buf`'s first `len` bytes, growing it (zero-filled) if it is shorter.
    fn sized<'b>(&self, buf: &'b mut Vec<u8>) -> &'b mut [u8] {
        let len = self.len as usize;
        if buf.len() < len {
            buf.resize(len, 0);
        }
        &mut buf[..len]
    }

    /// A heap copy of exactly the slice's bytes (`pread`), for tests.
    pub fn to_bytes(&self) -> Result<Bytes, StorageError> {
        let mut buf = vec![0u8; self.len as usize];
        self.segment.read_exact_at(&mut buf, self.position)?;
        Ok(Bytes::from(buf))
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::storage::index::SparseIndex;
    use crate::storage::segment::{SegmentEnd, evict_from_page_cache};

    const FILE_BYTES: usize = 8 * 1024 * 1024;
    /// Attempts at dropping the test file from the page cache before the test gives up.
    const EVICTION_TRIES: usize = 20;

    /// A slice over a whole file of `FILE_BYTES` patterned bytes, written and fsynced, then
    /// dropped from the page cache (`POSIX_FADV_DONTNEED` drops clean pages).
    fn uncached_slice(dir: &std::path::Path) -> (ReadSlice, Vec<u8>) {
        let path = dir.join("segment");
        let bytes: Vec<u8> = (0..FILE_BYTES).map(|i| (i % 251) as u8).collect();
        let mut file = File::options()
            .create_new(true)
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        file.write_all(&bytes).unwrap();
        file.sync_all().unwrap();
        let segment = Segment::new(
            0,
            0,
            path,
            file,
            SegmentEnd::default(),
            SparseIndex::new(4096),
        );
        // The slice reads through this descriptor. Under load `POSIX_FADV_DONTNEED` can leave
        // a page or two cached (seen in loaded runs), and every test here depends on which
        // pages are: evict until `mincore` finds none resident (a few tries at most). A
        // non-blocking read would not do as the check: a miss starts reading the page.
        for _ in 0..EVICTION_TRIES {
            evict_from_page_cache(segment.file());
            if resident_pages(segment.file(), FILE_BYTES) == 0 {
                break;
            }
        }
        assert_eq!(
            resident_pages(segment.file(), FILE_BYTES),
            0,
            "these tests need a filesystem that drops clean pages on POSIX_FADV_DONTNEED and \
             reads with RWF_NOWAIT (ext4, XFS, btrfs; not tmpfs): is TMPDIR on one?"
        );
        let slice = ReadSlice::new(Arc::new(segment), 0, FILE_BYTES as u32, 0);
        (slice, bytes)
    }

    /// Pages of the first `len` bytes of `file` in the page cache (`mincore` over a mapping;
    /// mapping and probing read no page in).
    #[allow(unsafe_code)] // mmap and mincore are unsafe: see the SAFETY comment.
    fn resident_pages(file: &File, len: usize) -> usize {
        use std::os::fd::AsRawFd;
        let pages = len.div_ceil(4096);
        let mut residency = vec![0u8; pages];
        // SAFETY: a read-only shared mapping of `len` bytes of a file this test wrote (at
        // least `len` long); nothing dereferences it — `mincore` only reports residency into
        // `residency`, one byte per page as it requires — and it is unmapped before return.
        let rc = unsafe {
            let addr = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            );
            assert_ne!(addr, libc::MAP_FAILED, "mmap for mincore");
            let rc = libc::mincore(addr, len, residency.as_mut_ptr());
            libc::munmap(addr, len);
            rc
        };
        assert_eq!(rc, 0, "mincore");
        residency.iter().filter(|page| **page & 1 == 1).count()
    }

    /// What a session gathers behind a small FETCH answer's header: a prefix of the slice's
    /// bytes while some are not cached (the session then takes the general path), all of them
    /// once they are.
    #[test]
    fn a_cached_read_into_a_slice_returns_a_prefix_of_its_bytes_and_all_once_cached() {
        let dir = tempfile::tempdir().unwrap();
        let (slice, bytes) = uncached_slice(dir.path());
        let mut dst = vec![0u8; slice.len() as usize];
        // How much a miss finds cached is a race with the readahead it starts.
        let cached = slice.read_cached_to(&mut dst).unwrap().unwrap();
        assert_eq!(dst[..cached], bytes[..cached]);
        let mut rest = Vec::new();
        slice.read_rest_into(&mut rest, 0).unwrap();
        // Read once, the file is cached. A non-blocking read can still come up short for a
        // moment while the readahead the first miss started finishes with pages of the range
        // (it holds them locked): seen once in a loaded run. Allow it that moment, no more.
        let mut read = 0;
        for _ in 0..MAX_CACHED_READ_ATTEMPTS {
            read = slice.read_cached_to(&mut dst).unwrap().unwrap();
            if read == bytes.len() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(read, bytes.len(), "read once, the file is cached");
        assert_eq!(dst, bytes);
    }

    /// Attempts (10 ms apart) a cached read of a just-read file gets to return all of it.
    const MAX_CACHED_READ_ATTEMPTS: u32 = 100;

    /// A probe that misses starts reading the page it asked for, and on a fast disk that read
    /// can finish before the probe looks again: the probe then says "cached", truthfully. So a
    /// test that expects a miss tries up to this many fresh evictions and needs one miss seen;
    /// a probe that never looked at an uncached page would never report one.
    const MISS_TRIES: usize = 20;

    /// A slice as [`uncached_slice`] makes it, once its probe reported it uncached.
    fn slice_seen_uncached(dir: &std::path::Path) -> (ReadSlice, Vec<u8>) {
        for attempt in 0..MISS_TRIES {
            let attempt_dir = dir.join(format!("attempt-{attempt}"));
            std::fs::create_dir(&attempt_dir).unwrap();
            let (slice, bytes) = uncached_slice(&attempt_dir);
            if slice.is_cached().unwrap() == Some(false) {
                return (slice, bytes);
            }
        }
        panic!("the probe of an evicted file never reported a miss in {MISS_TRIES} tries");
    }

    #[test]
    fn a_slice_dropped_from_the_page_cache_is_reported_uncached_until_read() {
        let dir = tempfile::tempdir().unwrap();
        let (slice, bytes) = slice_seen_uncached(dir.path());
        let mut buf = Vec::new();
        // A miss starts reading what was asked for (without waiting), so a cached read may find
        // more and more of the file as that read goes on: how much is a race.
        let cached = slice.read_cached_into(&mut buf).unwrap().unwrap();

        slice.read_rest_into(&mut buf, cached).unwrap();
        assert!(buf == bytes, "the blocking read returns the file's bytes");
        assert_eq!(slice.is_cached().unwrap(), Some(true));
        let mut again = Vec::new();
        assert_eq!(
            slice.read_cached_into(&mut again).unwrap(),
            Some(FILE_BYTES)
        );
        assert!(again == bytes, "the cached read returns the file's bytes");
    }

    #[test]
    fn a_cached_read_returns_at_least_the_cached_prefix_and_the_blocking_rest_completes_it() {
        let dir = tempfile::tempdir().unwrap();
        let (slice, bytes) = uncached_slice(dir.path());
        // Bring the first MiB back (no readahead: see `uncached_slice`).
        let first_bytes = 1024 * 1024;
        let mut head = vec![0u8; first_bytes];
        slice.segment.read_exact_at(&mut head, 0).unwrap();

        let mut buf = Vec::new();
        // At least the first MiB; more only if the read its miss started has delivered more.
        let cached = slice.read_cached_into(&mut buf).unwrap().unwrap();
        assert!(cached >= first_bytes, "{cached} bytes were cached");
        slice.read_rest_into(&mut buf, cached).unwrap();
        assert!(
            buf == bytes,
            "cached prefix and blocking rest make the file"
        );
    }

    #[test]
    fn the_probe_of_a_slice_reaches_its_last_page() {
        let dir = tempfile::tempdir().unwrap();
        // A slice ending one byte into the second page is uncached: its probe reached the last
        // page (the one miss needed, see MISS_TRIES).
        let mut missed = false;
        for attempt in 0..MISS_TRIES {
            let attempt_dir = dir.path().join(format!("attempt-{attempt}"));
            std::fs::create_dir(&attempt_dir).unwrap();
            let (whole, _) = uncached_slice(&attempt_dir);
            // Only the first page is cached (no readahead on this descriptor).
            whole.segment.read_exact_at(&mut [0u8; 4096], 0).unwrap();
            let slice = |position: u64, len: u32| {
                ReadSlice::new(Arc::clone(&whole.segment), position, len, 0)
            };
            // Within the cached first page: never a miss.
            assert_eq!(slice(0, 100).is_cached().unwrap(), Some(true));
            assert_eq!(slice(100, 3996).is_cached().unwrap(), Some(true));
            if slice(100, 3997).is_cached().unwrap() == Some(false) {
                missed = true;
                break;
            }
        }
        assert!(
            missed,
            "a slice reaching into an evicted page was never reported uncached"
        );
    }
}
