//! The blocking file work: read a position, and replace it so that a crash at any instant leaves
//! either the old complete file or the new complete file.
//!
//! A save is the classic sequence of [`crate::durable_file`] (public, for any file that must
//! never be half-written), and each step is there for a reason:
//!
//! 1. write the new bytes to `<partition>.offset.tmp` (truncating whatever a crash left there);
//! 2. `fsync` the temp file — otherwise the rename below can reach the disk before the data,
//!    and a power cut leaves an empty or partial file under the real name;
//! 3. `rename` it over `<partition>.offset` — atomic: readers (and a reboot) see the old file or
//!    the new one, never a mix;
//! 4. `fsync` the directory — the rename is a change to the directory, and is not durable until
//!    the directory is synced.
//!
//! The first save of a key in a process also creates the key's directories and fsyncs their
//! parents, so the new entries survive a power cut too.
//!
//! There is no "poisoned" state after a failed fsync (unlike the broker's log): each save writes
//! a fresh file and only reports success once its own fsyncs succeeded, so a failure affects only
//! the save that reports it.
//!
//! Everything here blocks; [`crate::FileOffsetStore`] runs it on tokio's blocking pool.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::Path;

use crate::durable_file::{self, sync_directory};
use crate::error::{IoStep, OffsetStoreError};
use crate::format::{self, MAX_FILE_BYTES};
use crate::key::OffsetKey;
use crate::layout::KeyPaths;

/// The saved offset of `key`, `None` if its file does not exist, an error naming the file if it
/// exists but is not a valid position for `key`.
pub fn read_offset(paths: &KeyPaths, key: &OffsetKey) -> Result<Option<i64>, OffsetStoreError> {
    let read_error = |error| OffsetStoreError::io(IoStep::Read, &paths.file, error);
    let file = match File::open(&paths.file) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(read_error(error)),
    };
    // One byte more than the largest valid file, so "too long" is detected without reading a
    // huge foreign file into memory.
    let mut bytes = Vec::with_capacity(MAX_FILE_BYTES + 1);
    file.take(MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    format::decode(&bytes, key)
        .map(Some)
        .map_err(|problem| OffsetStoreError::Corrupt {
            path: paths.file.clone(),
            problem,
        })
}

/// Replaces the offset file of `key` with one holding `offset` (steps 1–4 of the module docs,
/// done by [`crate::durable_file`]).
pub fn write_offset(
    paths: &KeyPaths,
    key: &OffsetKey,
    offset: i64,
) -> Result<(), OffsetStoreError> {
    let bytes = format::encode(key, offset);
    durable_file::replace_via(&paths.temp, &paths.file, &paths.topic_dir, &bytes)
}

/// Creates the key's directories if needed and makes their entries durable by fsyncing each
/// parent. Done once per key per process, before its first write; cheap to repeat.
pub fn make_directories_durable(root: &Path, paths: &KeyPaths) -> Result<(), OffsetStoreError> {
    fs::create_dir_all(&paths.topic_dir)
        .map_err(|error| OffsetStoreError::io(IoStep::CreateDirectory, &paths.topic_dir, error))?;
    sync_directory(root)?;
    sync_directory(&paths.consumer_dir)
}

/// Removes the temp file a crashed save may have left. Housekeeping only: readers never look at
/// temp files, and the next save truncates it anyway, so a failure is logged, not returned.
pub fn remove_stale_temp(paths: &KeyPaths) {
    match fs::remove_file(&paths.temp) {
        Ok(()) => tracing::info!(
            path = %paths.temp.display(),
            "removed a temporary offset file left by an interrupted save"
        ),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => tracing::warn!(
            path = %paths.temp.display(),
            %error,
            "could not remove a stale temporary offset file; it is ignored"
        ),
    }
}

/// Creates the store's root directory if it is missing, durably (its parent is fsynced).
pub fn create_root(root: &Path) -> Result<(), OffsetStoreError> {
    if root.is_dir() {
        return Ok(());
    }
    fs::create_dir_all(root)
        .map_err(|error| OffsetStoreError::io(IoStep::CreateDirectory, root, error))?;
    match root.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => sync_directory(parent),
        _ => sync_directory(Path::new(".")),
    }
}
