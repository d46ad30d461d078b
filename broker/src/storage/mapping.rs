//! The memory mapping of an active segment in MAPPED mode, and the only `unsafe` in the storage.
//!
//! A mapped segment file is pre-sized to its capacity (sparse, all zeros) and mapped shared and
//! writable; appending a record is a `memcpy` into the page cache with no system call. The order
//! of the stores matters: payload, then CRC, then the length **last**. A zero length means "no
//! record here" to recovery, so a process that dies half-way through a record leaves a zero
//! length, never a plausible header in front of a half-written body.
//!
//! A store into a page whose block the filesystem cannot allocate (a full disk) is `SIGBUS`, not
//! an error, so the writer reserves the blocks of a range with `fallocate` before it writes
//! records there (`active.rs`).
//!
//! Durability is a separate matter: stores into a shared mapping reach the page cache, not the
//! disk. [`MappedRange::flush`] is `msync(MS_SYNC)`, which POSIX requires for changes
//! made through a mapping to be written back; the caller then `fdatasync`s the file descriptor,
//! which is the barrier that also flushes the device's write cache. msync alone is not treated
//! as a durability barrier (see `docs/storage.md`).

use std::fs::File;
use std::sync::atomic::{Ordering, compiler_fence};

use booblik_protocol::{RECORD_HEADER_BYTES, crc32c};
use memmap2::{MmapMut, MmapOptions};

use super::io::{MappedRange, StorageIo};

/// A writable shared mapping of a whole segment file.
#[derive(Debug)]
pub(crate) struct SegmentMapping {
    map: MmapMut,
}

impl SegmentMapping {
    /// Maps the first `len` bytes of `file`, which must already be at least `len` bytes long.
    #[allow(unsafe_code)] // memmap2's `map_mut` is unsafe: see the SAFETY comment.
    pub(crate) fn map(file: &File, len: u64) -> std::io::Result<Self> {
        let len = usize::try_from(len).map_err(std::io::Error::other)?;
        // SAFETY: memmap2 marks mapping unsafe because another process (or thread) could
        // truncate or modify the file behind the mapping, turning accesses into SIGBUS or data
        // races. The file is a segment inside a data directory that `Storage::open` holds an
        // exclusive lock on, so no other broker writes it; inside this process only the
        // partition's single writer thread touches the mapping, and the file is never shrunk
        // while it is mapped (the writer drops the mapping before trimming a sealed segment).
        // Readers never use the mapping; they `pread` the file descriptor.
        let map = unsafe { MmapOptions::new().len(len).map_mut(file)? };
        Ok(Self { map })
    }

    /// Bytes mapped (the segment's capacity).
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// Writes one record at `position`: payload, CRC, and the length last, each one store
    /// through `io` ([`StorageIo::store_mapped`]). The caller has checked that
    /// `position + 8 + payload.len()` fits the mapping. An error means the stores from the
    /// failing one on did not happen (only a simulated crash fails a store).
    pub(crate) fn write_record(
        &mut self,
        io: &dyn StorageIo,
        position: usize,
        payload: &[u8],
    ) -> std::io::Result<()> {
        let body = position + RECORD_HEADER_BYTES;
        io.store_mapped(&mut self.map[body..body + payload.len()], payload)?;
        io.store_mapped(
            &mut self.map[position + 4..body],
            &crc32c(payload).to_be_bytes(),
        )?;
        // Keep the compiler from sinking the payload/CRC stores below the length store: a
        // process killed between them must leave a zero length. (Hardware order does not matter
        // for a process crash; the stores all land in the same page cache pages. Power loss is
        // covered only by fsync.)
        compiler_fence(Ordering::SeqCst);
        let len = payload.len() as i32;
        io.store_mapped(&mut self.map[position..position + 4], &len.to_be_bytes())
    }

    /// `len` bytes from `position`, for an `msync` through the storage's I/O
    /// ([`MappedRange::flush`]): not a barrier on its own; follow with `fdatasync`.
    pub(crate) fn range(&self, position: usize, len: usize) -> MappedRange<'_> {
        MappedRange::new(&self.map, position, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    #[test]
    fn a_mapped_record_is_readable_through_the_file_descriptor() {
        let file = tempfile::tempfile().unwrap();
        file.set_len(64).unwrap();
        let mut mapping = SegmentMapping::map(&file, 64).unwrap();
        mapping
            .write_record(&super::super::io::RealIo, 0, b"hello")
            .unwrap();
        let mut buf = [0u8; 13];
        file.read_exact_at(&mut buf, 0).unwrap();
        let mut expected = Vec::new();
        booblik_protocol::encode_record(b"hello", &mut expected);
        assert_eq!(&buf[..], &expected[..]);
        // The rest of the pre-sized file is still zero: an end-of-log marker.
        let mut tail = [1u8; 4];
        file.read_exact_at(&mut tail, 13).unwrap();
        assert_eq!(tail, [0; 4]);
        mapping.range(0, 13).flush().unwrap();
    }
}
