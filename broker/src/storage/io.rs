//! The storage's I/O seam: every call of the write and recovery path that changes a file or a
//! directory, or makes a change durable, goes through one [`StorageIo`].
//!
//! Production uses [`RealIo`], the file system itself, with no test branch anywhere. Tests pass
//! a simulated implementation instead (`storage::test_io`, behind the `test-io` cargo feature):
//! injected fsync failures, a full disk, stalls, and a power-loss model that keeps every file's
//! durable image next to its current one. That is why the seam covers exactly the calls whose
//! *durability* matters — creating, writing, sizing, syncing, renaming and removing — and not
//! reads: a read sees the current image, which is the real file in every implementation.
//!
//! MAPPED mode stores records with memory copies into a shared mapping; each of the three
//! stores of a record (payload, CRC, length: `mapping.rs`) is one [`StorageIo::store_mapped`],
//! a plain `copy_from_slice` in production, so a simulation can stop a process between two
//! stores of one record. Durability goes through the flush ([`StorageIo::flush_mapped`]) and
//! the `fdatasync` after it. Stores into a shared mapping are in the page cache, so a simulation
//! that reads the file at `fdatasync` time sees the mapped bytes (and `msync` alone is not a
//! barrier, SPEC §3).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;

use memmap2::MmapMut;
use rustix::fs::FallocateFlags;
use rustix::io::Errno;

/// The file-system calls of the storage's write and recovery path. See the module docs.
///
/// Every method is one system call (or a loop of one), with the standard library's or
/// `rustix`'s meaning; an implementation may add faults, delays or bookkeeping but must keep
/// that meaning for whatever it lets through.
pub trait StorageIo: std::fmt::Debug + Send + Sync + 'static {
    /// Creates a new, empty file at `path` for reading and writing; fails if it exists.
    fn create_new(&self, path: &Path) -> std::io::Result<File>;
    /// Opens an existing file for reading and writing (recovery).
    fn open(&self, path: &Path) -> std::io::Result<File>;
    /// `pwrite` of all of `bytes` at `position`.
    fn write_all_at(&self, file: &File, bytes: &[u8], position: u64) -> std::io::Result<()>;
    /// `ftruncate`: sets the file's size (growing with zeros, or cutting).
    fn set_len(&self, file: &File, len: u64) -> std::io::Result<()>;
    /// `fallocate(file, 0, from, to - from)`: allocates the blocks of `[from, to)` inside the
    /// file, whose size stays.
    fn allocate(&self, file: &File, from: u64, to: u64) -> std::io::Result<()>;
    /// One store into a segment's shared mapping: copies `bytes` into `to` (of the same
    /// length). Not a system call — a `memcpy` into the page cache; it goes through the seam
    /// only so that a simulation can count the stores of a MAPPED record and stop a process
    /// between two of them (`test_io`). An `Err` means the store did not happen.
    fn store_mapped(&self, to: &mut [u8], bytes: &[u8]) -> std::io::Result<()>;
    /// `msync` of a range of a segment's mapping (the real file system: `MS_ASYNC`, see
    /// [`MappedRange::flush_async`]). Not a durability barrier: the `fdatasync` after it is.
    fn flush_mapped(&self, range: MappedRange<'_>) -> std::io::Result<()>;
    /// `fdatasync`: the file's data and size are durable once it returns `Ok`.
    fn sync_data(&self, file: &File) -> std::io::Result<()>;
    /// `fsync`: the file's data and metadata are durable once it returns `Ok`.
    fn sync_all(&self, file: &File) -> std::io::Result<()>;
    /// `fsync` of a directory: names created, renamed or removed in it are durable once it
    /// returns `Ok`.
    fn sync_dir(&self, dir: &Path) -> std::io::Result<()>;
    /// Creates a directory and its missing parents.
    fn create_dir_all(&self, dir: &Path) -> std::io::Result<()>;
    /// Renames a file (within one directory, here).
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()>;
    /// Removes a file's name.
    fn remove_file(&self, path: &Path) -> std::io::Result<()>;
}

/// A range of a segment's memory mapping, for [`StorageIo::flush_mapped`].
#[derive(Debug, Clone, Copy)]
pub struct MappedRange<'a> {
    map: &'a MmapMut,
    from: usize,
    len: usize,
}

impl<'a> MappedRange<'a> {
    pub(crate) fn new(map: &'a MmapMut, from: usize, len: usize) -> Self {
        Self { map, from, len }
    }

    /// `msync(MS_SYNC)` of the range.
    pub fn flush(&self) -> std::io::Result<()> {
        if self.len == 0 {
            return Ok(());
        }
        self.map.flush_range(self.from, self.len)
    }

    /// `msync(MS_ASYNC)` of the range: starts the write-back without waiting for it. On Linux
    /// the `fdatasync` that follows writes back every page of the file dirtied through a shared
    /// mapping and waits for it, so the pair is as durable as `msync(MS_SYNC)` + `fdatasync`;
    /// but `MS_SYNC` is itself a `fdatasync` of the range on Linux (`vfs_fsync_range`), and the
    /// second one then costs a device cache flush of its own.
    pub fn flush_async(&self) -> std::io::Result<()> {
        if self.len == 0 {
            return Ok(());
        }
        self.map.flush_async_range(self.from, self.len)
    }

    /// The mapped bytes of the range (what the page cache holds for them).
    pub fn bytes(&self) -> &'a [u8] {
        &self.map[self.from..self.from + self.len]
    }
}

/// The real file system: what the broker uses.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealIo;

impl StorageIo for RealIo {
    fn create_new(&self, path: &Path) -> std::io::Result<File> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
    }

    fn open(&self, path: &Path) -> std::io::Result<File> {
        OpenOptions::new().read(true).write(true).open(path)
    }

    fn write_all_at(&self, file: &File, bytes: &[u8], position: u64) -> std::io::Result<()> {
        file.write_all_at(bytes, position)
    }

    fn set_len(&self, file: &File, len: u64) -> std::io::Result<()> {
        file.set_len(len)
    }

    fn allocate(&self, file: &File, from: u64, to: u64) -> std::io::Result<()> {
        loop {
            match rustix::fs::fallocate(file, FallocateFlags::empty(), from, to - from) {
                Err(Errno::INTR) => {}
                result => return result.map_err(Into::into),
            }
        }
    }

    #[inline]
    fn store_mapped(&self, to: &mut [u8], bytes: &[u8]) -> std::io::Result<()> {
        to.copy_from_slice(bytes);
        Ok(())
    }

    fn flush_mapped(&self, range: MappedRange<'_>) -> std::io::Result<()> {
        // Not `MS_SYNC`: the `fdatasync` after it is the barrier (see `MappedRange::flush_async`).
        range.flush_async()
    }

    fn sync_data(&self, file: &File) -> std::io::Result<()> {
        file.sync_data()
    }

    fn sync_all(&self, file: &File) -> std::io::Result<()> {
        file.sync_all()
    }

    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn create_dir_all(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> std::io::Result<()> {
        std::fs::remove_file(path)
    }
}
