//! A simulated [`StorageIo`] for tests (the `test-io` cargo feature): faults on demand, and a
//! model of what a power loss keeps.
//!
//! # Faults
//!
//! [`SimIo::new`] passes every call to the real file system, except when a test arms a fault:
//! the next fsync failing ([`SimIo::fail_next_fsync`], [`SimIo::fail_next_fsync_of`] a file,
//! [`SimIo::fail_next_directory_fsync`]), a
//! disk with a few bytes left ([`SimIo::set_free_bytes`]: `fallocate` gets all or `ENOSPC`,
//! `pwrite` a short write and then `ENOSPC`), no room for a new file
//! ([`SimIo::refuse_new_files`]), or every call held until a guard drops ([`SimIo::stall`]: a
//! slow disk, which holds the partition's writer with its batch in hand).
//!
//! # Power loss
//!
//! [`SimIo::with_power_loss`] also keeps, for every file the storage created or opened, the
//! **durable image**: its bytes as of its last successful `fdatasync`/`fsync` (read from the
//! file at that moment, so in MAPPED mode it holds the mapped bytes — an `msync` alone makes
//! nothing durable), and, per directory, the **durable names**: the names as of the directory's
//! last fsync. The real files are the current image (what the page cache holds). Then:
//!
//! 1. [`SimIo::crash_after`] (or [`SimIo::crash_now`]) picks the moment of the power loss: the
//!    n-th call from now. From that call on every call fails with `EIO` and changes nothing, so
//!    nothing the storage does afterwards (answering, closing, syncing on drop) counts.
//! 2. The test drops the storage and calls [`SimIo::power_loss`], which rewrites the
//!    directories to what the disk would hold: every durable name with its file's durable
//!    image; names that were never made durable vanish, removed names come back. With
//!    [`PowerLoss::InOrder`] a seeded prefix of the 4 KiB pages written since the file's last
//!    fsync survives as well (write-back in file order), and the page after it may be torn:
//!    only a prefix of its 512-byte sectors made it; with [`PowerLoss::AnyOrder`] a seeded
//!    subset of those pages survives (write-back in any order) and one more is torn. Either
//!    way the file's size is the durable or the current one.
//! 3. The storage reopens over that image, through the same `SimIo`, which starts again from
//!    "everything on disk is durable".
//!
//! A *process* crash is the same cut without the power loss: [`SimIo::crash_after_stores`]
//! stops the process at the n-th store into a mapping (each MAPPED record is three stores:
//! payload, CRC, length), or [`SimIo::crash_after`] at a call; then [`SimIo::process_crash`]
//! keeps every file's current image, as the page cache does when only the process dies.
//!
//! Not modelled: directories themselves (they are assumed to survive once created), files the
//! storage never created or opened through the seam (the data directory's lock file), and
//! anything below the file system — a device that acknowledges a flush it did not do, or a file
//! system whose ordering differs from "data and size durable on `fdatasync`, names on the
//! directory's `fsync`".

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use rustix::io::Errno;

use super::io::{MappedRange, RealIo, StorageIo};

/// Page size of the power-loss model: write-back keeps or loses whole pages.
pub const PAGE_BYTES: usize = 4096;
/// Sector size of the power-loss model: a torn page keeps a prefix of whole sectors.
pub const SECTOR_BYTES: usize = 512;

/// What a power loss keeps besides the durable image; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PowerLoss {
    /// Exactly the durable image: every byte no fsync covered is lost.
    DurableOnly,
    /// Write-back in file order: the durable image plus, per file, the first k (from `seed`)
    /// of the pages written since its last fsync, the page after them torn or not, and the
    /// file's size either the durable or the current one.
    InOrder {
        /// Seed of the choices.
        seed: u64,
    },
    /// Write-back in any order: the durable image plus a random subset (from `seed`) of the
    /// pages written since each file's last fsync, one more such page torn, and each file's
    /// size either the durable or the current one.
    AnyOrder {
        /// Seed of the choices.
        seed: u64,
    },
}

/// What [`SimIo::power_loss`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PowerLossReport {
    /// Files rewritten to their durable image (with any kept pages).
    pub files_kept: usize,
    /// Files whose name was never made durable, or was removed durably: gone.
    pub files_lost: usize,
    /// Pages written after the last fsync that were kept anyway (reordered write-back).
    pub unsynced_pages_kept: usize,
    /// Pages written after the last fsync that were lost.
    pub unsynced_pages_lost: usize,
    /// Torn pages (at most one).
    pub torn_pages: usize,
}

/// The simulated I/O; see the module docs.
#[derive(Debug, Default)]
pub struct SimIo {
    state: Mutex<State>,
    resumed: Condvar,
}

/// Faults armed by the test.
#[derive(Debug, Default)]
struct Faults {
    fail_next_fsync: bool,
    /// (device, inode) of the file whose next fsync fails.
    fail_next_fsync_of: Option<(u64, u64)>,
    fail_next_directory_fsync: bool,
    refuse_new_files: bool,
    free_bytes: Option<u64>,
    /// (device, inode) → the end of the range `fallocate` reserved in that file while
    /// `free_bytes` counted. Writes below it take no free bytes: their blocks are allocated.
    allocated_end: HashMap<(u64, u64), u64>,
}

#[derive(Debug, Default)]
struct State {
    faults: Faults,
    stalled: bool,
    /// Holds file fsyncs only (see [`SimIo::stall_fsyncs`]).
    fsyncs_stalled: bool,
    /// With `fsyncs_stalled`: only the fsyncs of this (device, inode) are held
    /// ([`SimIo::stall_fsyncs_of`]).
    stalled_file: Option<(u64, u64)>,
    /// With `fsyncs_stalled`: directory fsyncs are held too ([`SimIo::stall_all_fsyncs`]).
    directory_fsyncs_stalled: bool,
    /// Calls seen so far.
    calls: u64,
    /// The call number at which the power goes out.
    crash_at: Option<u64>,
    /// Stores into a mapping seen so far ([`StorageIo::store_mapped`]; not counted as calls).
    stores: u64,
    /// The store number at which the process (or the power) goes out.
    store_crash_at: Option<u64>,
    /// Set at the power loss.
    crash: Option<Crash>,
    /// The durability model; `None` for faults only.
    model: Option<Model>,
}

/// The durability model: which file is which, and what of it is durable.
#[derive(Debug, Default, Clone)]
struct Model {
    next_id: u64,
    /// (device, inode) of an open, named file → its id.
    by_inode: HashMap<(u64, u64), u64>,
    /// Current names → file ids.
    names: BTreeMap<PathBuf, u64>,
    /// Names as of their directory's last fsync → file ids.
    durable_names: BTreeMap<PathBuf, u64>,
    /// File id → bytes as of its last fsync (absent: never synced, empty).
    durable: HashMap<u64, Vec<u8>>,
}

/// The disk at the moment of the power loss.
#[derive(Debug)]
struct Crash {
    durable_names: BTreeMap<PathBuf, u64>,
    durable: HashMap<u64, Vec<u8>>,
    /// Names at that moment, and the bytes their files held (the page cache).
    current_names: BTreeMap<PathBuf, u64>,
    current: HashMap<u64, Vec<u8>>,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

fn inode(metadata: &std::fs::Metadata) -> (u64, u64) {
    (metadata.dev(), metadata.ino())
}

fn read_whole(file: &File) -> std::io::Result<Vec<u8>> {
    let len = file.metadata()?.len() as usize;
    let mut bytes = vec![0; len];
    file.read_exact_at(&mut bytes, 0)?;
    Ok(bytes)
}

fn injected(what: &str) -> std::io::Error {
    std::io::Error::other(format!("injected {what} failure (SimIo)"))
}

/// The splitmix64 generator: small, seedable, good enough to pick pages.
#[derive(Debug)]
struct Choices(u64);

impl Choices {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }

    fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }
}

impl SimIo {
    /// Faults on demand over the real file system; no power-loss model.
    pub fn new() -> Self {
        Self::default()
    }

    /// Faults on demand and the power-loss model (see the module docs). Real fsyncs are not
    /// issued: the model decides what is durable.
    pub fn with_power_loss() -> Self {
        let sim = Self::default();
        lock(&sim.state).model = Some(Model::default());
        sim
    }

    /// The next fsync of any kind (file data, file, directory) fails with an I/O error.
    pub fn fail_next_fsync(&self) {
        lock(&self.state).faults.fail_next_fsync = true;
    }

    /// The next fsync of the file at `path` fails, every other fsync is left alone: the seal of
    /// a full segment, whose roll fsyncs the next segment and the directory first.
    pub fn fail_next_fsync_of(&self, path: &Path) {
        let file = inode(&std::fs::metadata(path).expect("the file exists"));
        lock(&self.state).faults.fail_next_fsync_of = Some(file);
    }

    /// The next *directory* fsync fails, file fsyncs are left alone: a test can then tell that
    /// a directory fsync happened where it must (after a segment roll).
    pub fn fail_next_directory_fsync(&self) {
        lock(&self.state).faults.fail_next_directory_fsync = true;
    }

    /// From now on the disk has `free` bytes left for `fallocate` and `pwrite` (`None`: the
    /// real disk's). A `pwrite` into a range `fallocate` reserved since takes none of them.
    pub fn set_free_bytes(&self, free: Option<u64>) {
        lock(&self.state).faults.free_bytes = free;
    }

    /// From now on new files cannot be created (`ENOSPC`: no free inode, or no block for the
    /// directory entry), however many bytes are free.
    pub fn refuse_new_files(&self, refuse: bool) {
        lock(&self.state).faults.refuse_new_files = refuse;
    }

    /// Holds every call (a stalled disk) until the guard is dropped: a partition's writer stops
    /// inside its next call, with the batch it is writing (and its room in the queue) in hand.
    pub fn stall(&self) -> Stall<'_> {
        lock(&self.state).stalled = true;
        Stall { sim: self }
    }

    /// Holds every file fsync (`fdatasync`/`fsync` of a segment) until the guard is dropped,
    /// letting writes through: a FORCED batch is then written — visible, its WRITTEN-level
    /// neighbours answered — and waits for its fsync, the state a session must not let hold back
    /// the requests after it.
    pub fn stall_fsyncs(&self) -> FsyncStall<'_> {
        let mut state = lock(&self.state);
        state.fsyncs_stalled = true;
        state.stalled_file = None;
        FsyncStall { sim: self }
    }

    /// Holds every fsync, of files and of directories, until the guard is dropped: the disk
    /// busy writing another partition's seal back, so that no fsync gets through, while writes
    /// into the page cache still do.
    pub fn stall_all_fsyncs(&self) -> FsyncStall<'_> {
        let mut state = lock(&self.state);
        state.fsyncs_stalled = true;
        state.stalled_file = None;
        state.directory_fsyncs_stalled = true;
        FsyncStall { sim: self }
    }

    /// Holds the fsyncs of the file at `path` only, until the guard is dropped: a full
    /// segment's seal, while the roll that handed it off fsyncs the next segment.
    pub fn stall_fsyncs_of(&self, path: &Path) -> FsyncStall<'_> {
        let file = inode(&std::fs::metadata(path).expect("the file exists"));
        let mut state = lock(&self.state);
        state.fsyncs_stalled = true;
        state.stalled_file = Some(file);
        FsyncStall { sim: self }
    }

    /// Calls seen so far.
    pub fn calls(&self) -> u64 {
        lock(&self.state).calls
    }

    /// The power goes out at the `calls`-th call from now (1: the next one). With the power-loss
    /// model only.
    pub fn crash_after(&self, calls: u64) {
        let mut state = lock(&self.state);
        assert!(
            state.model.is_some(),
            "crash_after needs SimIo::with_power_loss"
        );
        state.crash_at = Some(state.calls + calls.max(1));
    }

    /// The power goes out now, unless it already did.
    pub fn crash_now(&self) -> std::io::Result<()> {
        let mut state = lock(&self.state);
        if state.crash.is_none() {
            Self::take_crash(&mut state)?;
        }
        Ok(())
    }

    /// Stores into a mapping seen so far (MAPPED records: three each); not counted in
    /// [`SimIo::calls`].
    pub fn stores(&self) -> u64 {
        lock(&self.state).stores
    }

    /// The crash comes at the `stores`-th store into a mapping from now (1: the next one): that
    /// store and every later one is not executed, and every call from then on fails as after
    /// [`SimIo::crash_after`]. With the power-loss model only.
    pub fn crash_after_stores(&self, stores: u64) {
        let mut state = lock(&self.state);
        assert!(
            state.model.is_some(),
            "crash_after_stores needs SimIo::with_power_loss"
        );
        state.store_crash_at = Some(state.stores + stores.max(1));
    }

    /// After a crash, once the storage is dropped: the *process* died, the machine did not.
    /// Every file keeps its current image (the page cache survives a killed process), and the
    /// storage reopens over it; later calls work again, and everything on disk counts as
    /// durable. The counterpart of [`SimIo::power_loss`].
    pub fn process_crash(&self) -> std::io::Result<()> {
        let mut state = lock(&self.state);
        if state.crash.is_none() {
            Self::take_crash(&mut state)?;
        }
        *state = State {
            model: Some(Model::default()),
            ..State::default()
        };
        Ok(())
    }

    /// True once the power went out.
    pub fn has_crashed(&self) -> bool {
        lock(&self.state).crash.is_some()
    }

    /// Rewrites the files to what the disk holds after the power loss (see the module docs);
    /// call it once the storage is dropped. The power comes back: later calls work again, and
    /// everything on disk counts as durable.
    pub fn power_loss(&self, loss: PowerLoss) -> std::io::Result<PowerLossReport> {
        let mut state = lock(&self.state);
        if state.crash.is_none() {
            Self::take_crash(&mut state)?;
        }
        let crash = state.crash.take().expect("taken above");
        let (mut choices, any_order) = match loss {
            PowerLoss::DurableOnly => (None, false),
            PowerLoss::InOrder { seed } => (Some(Choices(seed)), false),
            PowerLoss::AnyOrder { seed } => (Some(Choices(seed)), true),
        };
        let mut report = PowerLossReport::default();
        for path in crash.current_names.keys() {
            match std::fs::remove_file(path) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(error),
            }
        }
        report.files_lost = crash
            .current_names
            .keys()
            .filter(|path| !crash.durable_names.contains_key(*path))
            .count();
        let mut model = Model::default();
        let mut torn = false;
        for (path, id) in &crash.durable_names {
            let durable = crash.durable.get(id).cloned().unwrap_or_default();
            let bytes = match (&mut choices, crash.current.get(id)) {
                (Some(choices), Some(current)) => mix(
                    &durable,
                    current,
                    any_order,
                    choices,
                    &mut torn,
                    &mut report,
                ),
                _ => durable,
            };
            std::fs::write(path, &bytes)?;
            let file_id = model.next_id;
            model.next_id += 1;
            model
                .by_inode
                .insert(inode(&std::fs::metadata(path)?), file_id);
            model.names.insert(path.clone(), file_id);
            model.durable_names.insert(path.clone(), file_id);
            model.durable.insert(file_id, bytes);
            report.files_kept += 1;
        }
        *state = State {
            model: Some(model),
            ..State::default()
        };
        report.torn_pages = usize::from(torn);
        Ok(report)
    }

    fn take_crash(state: &mut State) -> std::io::Result<()> {
        let model = state
            .model
            .as_ref()
            .expect("a power loss needs SimIo::with_power_loss");
        let mut current = HashMap::new();
        for (path, id) in &model.names {
            match std::fs::read(path) {
                Ok(bytes) => {
                    current.insert(*id, bytes);
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(error),
            }
        }
        state.crash = Some(Crash {
            durable_names: model.durable_names.clone(),
            durable: model.durable.clone(),
            current_names: model.names.clone(),
            current,
        });
        Ok(())
    }

    /// Every call starts here: waits out a stall, counts the call, and fails once the power is
    /// out (taking the crash snapshot at the chosen call).
    fn enter(&self) -> std::io::Result<MutexGuard<'_, State>> {
        let mut state = lock(&self.state);
        while state.stalled {
            state = self
                .resumed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        state.calls += 1;
        if state.crash.is_none() && state.crash_at.is_some_and(|at| state.calls >= at) {
            Self::take_crash(&mut state)?;
        }
        if state.crash.is_some() {
            return Err(Errno::IO.into());
        }
        Ok(state)
    }

    /// The fsync of `file`: the injected failure, or the durable image taken now.
    fn sync_file(&self, file: &File) -> std::io::Result<()> {
        let mut state = self.enter()?;
        let this = inode(&file.metadata()?);
        while state.fsyncs_stalled && state.stalled_file.is_none_or(|held| held == this) {
            state = self
                .resumed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if state.faults.fail_next_fsync_of == Some(this) {
            state.faults.fail_next_fsync_of = None;
            return Err(injected("fsync"));
        }
        if std::mem::take(&mut state.faults.fail_next_fsync) {
            return Err(injected("fsync"));
        }
        let Some(model) = state.model.as_mut() else {
            drop(state);
            return file.sync_all();
        };
        let metadata = file.metadata()?;
        match model.by_inode.get(&inode(&metadata)) {
            Some(&id) => {
                let bytes = read_whole(file)?;
                model.durable.insert(id, bytes);
                Ok(())
            }
            None => Err(std::io::Error::other(
                "SimIo: fsync of a file the storage did not create or open through the seam",
            )),
        }
    }

    /// A file the storage opened that the model does not know yet: it was on disk before, so
    /// it is durable as it is.
    fn adopt(model: &mut Model, path: &Path, file: &File) -> std::io::Result<()> {
        let key = inode(&file.metadata()?);
        if model.by_inode.contains_key(&key) {
            return Ok(());
        }
        let id = model.next_id;
        model.next_id += 1;
        model.by_inode.insert(key, id);
        model.names.insert(path.to_path_buf(), id);
        model.durable_names.insert(path.to_path_buf(), id);
        model.durable.insert(id, read_whole(file)?);
        Ok(())
    }
}

/// The durable bytes of a file plus what write-back (in file order or any order) kept of
/// `current`.
fn mix(
    durable: &[u8],
    current: &[u8],
    any_order: bool,
    choices: &mut Choices,
    torn: &mut bool,
    report: &mut PowerLossReport,
) -> Vec<u8> {
    let len = if durable.len() != current.len() && choices.coin() {
        current.len()
    } else {
        durable.len()
    };
    let mut bytes = durable.to_vec();
    bytes.resize(len, 0);
    let page_of = |bytes: &[u8], page: usize| -> Vec<u8> {
        let start = (page * PAGE_BYTES).min(bytes.len());
        let end = (start + PAGE_BYTES).min(bytes.len());
        let mut out = bytes[start..end].to_vec();
        out.resize(PAGE_BYTES, 0);
        out
    };
    let unsynced: Vec<usize> = (0..len.div_ceil(PAGE_BYTES))
        .filter(|&page| page_of(&bytes, page) != page_of(current, page))
        .collect();
    // In file order: the first `in_order_kept` unsynced pages made it, the next may be torn.
    let in_order_kept = choices.below(unsynced.len() as u64 + 1) as usize;
    for (n, &page) in unsynced.iter().enumerate() {
        let now = page_of(current, page);
        let start = page * PAGE_BYTES;
        let end = (start + PAGE_BYTES).min(len);
        let keep = if any_order {
            choices.coin()
        } else {
            n < in_order_kept
        };
        let may_tear = any_order || n == in_order_kept;
        if keep {
            bytes[start..end].copy_from_slice(&now[..end - start]);
            report.unsynced_pages_kept += 1;
        } else if may_tear && !*torn && choices.below(4) == 0 {
            // A torn page: its first sectors were written, the rest not.
            let sectors = 1 + choices.below((PAGE_BYTES / SECTOR_BYTES - 1) as u64) as usize;
            let cut = (start + sectors * SECTOR_BYTES).min(end);
            bytes[start..cut].copy_from_slice(&now[..cut - start]);
            *torn = true;
        } else {
            report.unsynced_pages_lost += 1;
        }
    }
    bytes
}

/// Holds every call of a [`SimIo`] until dropped; see [`SimIo::stall`].
#[derive(Debug)]
#[must_use = "the disk resumes when the guard is dropped"]
pub struct Stall<'a> {
    sim: &'a SimIo,
}

impl Drop for Stall<'_> {
    fn drop(&mut self) {
        lock(&self.sim.state).stalled = false;
        self.sim.resumed.notify_all();
    }
}

/// Holds fsyncs of a [`SimIo`] until dropped; see [`SimIo::stall_fsyncs`],
/// [`SimIo::stall_fsyncs_of`] and [`SimIo::stall_all_fsyncs`].
#[derive(Debug)]
#[must_use = "fsyncs resume when the guard is dropped"]
pub struct FsyncStall<'a> {
    sim: &'a SimIo,
}

impl Drop for FsyncStall<'_> {
    fn drop(&mut self) {
        let mut state = lock(&self.sim.state);
        state.fsyncs_stalled = false;
        state.directory_fsyncs_stalled = false;
        drop(state);
        self.sim.resumed.notify_all();
    }
}

impl StorageIo for SimIo {
    fn create_new(&self, path: &Path) -> std::io::Result<File> {
        let mut state = self.enter()?;
        if state.faults.refuse_new_files {
            return Err(Errno::NOSPC.into());
        }
        let file = RealIo.create_new(path)?;
        if let Some(model) = state.model.as_mut() {
            let id = model.next_id;
            model.next_id += 1;
            model.by_inode.insert(inode(&file.metadata()?), id);
            model.names.insert(path.to_path_buf(), id);
        }
        Ok(file)
    }

    fn open(&self, path: &Path) -> std::io::Result<File> {
        let mut state = self.enter()?;
        let file = RealIo.open(path)?;
        if let Some(model) = state.model.as_mut() {
            Self::adopt(model, path, &file)?;
        }
        Ok(file)
    }

    fn write_all_at(&self, file: &File, bytes: &[u8], position: u64) -> std::io::Result<()> {
        let mut state = self.enter()?;
        if let Some(free) = state.faults.free_bytes {
            let allocated_end = if state.faults.allocated_end.is_empty() {
                0
            } else {
                let id = inode(&file.metadata()?);
                state.faults.allocated_end.get(&id).copied().unwrap_or(0)
            };
            let len = bytes.len() as u64;
            let reserved = allocated_end.saturating_sub(position).min(len);
            let room = free.min(len - reserved);
            state.faults.free_bytes = Some(free - room);
            if reserved + room < len {
                // What a real full disk does: a short write, then the error.
                RealIo.write_all_at(file, &bytes[..(reserved + room) as usize], position)?;
                return Err(Errno::NOSPC.into());
            }
        }
        RealIo.write_all_at(file, bytes, position)
    }

    fn set_len(&self, file: &File, len: u64) -> std::io::Result<()> {
        let mut state = self.enter()?;
        if !state.faults.allocated_end.is_empty() {
            // A cut releases the blocks past it.
            let id = inode(&file.metadata()?);
            if let Some(end) = state.faults.allocated_end.get_mut(&id) {
                *end = (*end).min(len);
            }
        }
        RealIo.set_len(file, len)
    }

    fn allocate(&self, file: &File, from: u64, to: u64) -> std::io::Result<()> {
        let mut state = self.enter()?;
        if let Some(free) = state.faults.free_bytes {
            if free < to - from {
                return Err(Errno::NOSPC.into());
            }
            state.faults.free_bytes = Some(free - (to - from));
            let end = state
                .faults
                .allocated_end
                .entry(inode(&file.metadata()?))
                .or_default();
            *end = (*end).max(to);
        }
        RealIo.allocate(file, from, to)
    }

    fn store_mapped(&self, to: &mut [u8], bytes: &[u8]) -> std::io::Result<()> {
        let mut state = lock(&self.state);
        state.stores += 1;
        if state.crash.is_none() && state.store_crash_at.is_some_and(|at| state.stores >= at) {
            Self::take_crash(&mut state)?;
        }
        if state.crash.is_some() {
            return Err(Errno::IO.into());
        }
        drop(state);
        RealIo.store_mapped(to, bytes)
    }

    fn flush_mapped(&self, range: MappedRange<'_>) -> std::io::Result<()> {
        let state = self.enter()?;
        if state.model.is_some() {
            // msync makes nothing durable in the model; only the fdatasync after it does.
            return Ok(());
        }
        drop(state);
        range.flush()
    }

    fn sync_data(&self, file: &File) -> std::io::Result<()> {
        self.sync_file(file)
    }

    fn sync_all(&self, file: &File) -> std::io::Result<()> {
        self.sync_file(file)
    }

    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        let mut state = self.enter()?;
        while state.fsyncs_stalled && state.directory_fsyncs_stalled {
            state = self
                .resumed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if std::mem::take(&mut state.faults.fail_next_fsync) {
            return Err(injected("fsync"));
        }
        if std::mem::take(&mut state.faults.fail_next_directory_fsync) {
            return Err(injected("directory fsync"));
        }
        let Some(model) = state.model.as_mut() else {
            drop(state);
            return RealIo.sync_dir(dir);
        };
        let in_dir = |path: &PathBuf| path.parent() == Some(dir);
        model.durable_names.retain(|path, _| !in_dir(path));
        for (path, id) in &model.names {
            if in_dir(path) {
                model.durable_names.insert(path.clone(), *id);
            }
        }
        // Files with no name at all, durable or current, are gone for good.
        let named: std::collections::HashSet<u64> = model
            .names
            .values()
            .chain(model.durable_names.values())
            .copied()
            .collect();
        model.durable.retain(|id, _| named.contains(id));
        Ok(())
    }

    fn create_dir_all(&self, dir: &Path) -> std::io::Result<()> {
        let _state = self.enter()?;
        RealIo.create_dir_all(dir)
    }

    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        let mut state = self.enter()?;
        RealIo.rename(from, to)?;
        if let Some(model) = state.model.as_mut()
            && let Some(id) = model.names.remove(from)
        {
            model.names.insert(to.to_path_buf(), id);
        }
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> std::io::Result<()> {
        let mut state = self.enter()?;
        let metadata = std::fs::metadata(path)?;
        RealIo.remove_file(path)?;
        if let Some(model) = state.model.as_mut() {
            model.names.remove(path);
            model.by_inode.remove(&inode(&metadata));
        }
        Ok(())
    }
}
