//! Replacing a whole file durably: a crash at any instant — of the process or of the machine —
//! leaves either the complete old bytes or the complete new bytes under the file's name, never a
//! mix, never an empty file.
//!
//! The offset store saves every position this way, and the same four steps serve any small file
//! that must never be half-written: a projection's snapshot (its read model *and* the positions
//! it reflects, in one file), a configuration, a manifest.
//!
//! 1. write the bytes to `<name>.tmp` next to the file (truncating whatever a crash left there);
//! 2. `fsync` the temp file — otherwise the rename can reach the disk before the data, and a
//!    power cut leaves an empty or partial file under the real name;
//! 3. `rename` it over `<name>` — atomic: readers (and a reboot) see the old file or the new one;
//! 4. `fsync` the directory — the rename is a change to the directory, and is not durable until
//!    the directory is synced.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("snapshot.json");
//! booblik_offset_store::durable_file::replace(&path, br#"{"events":1,"next_offset":1}"#)?;
//! booblik_offset_store::durable_file::replace(&path, br#"{"events":2,"next_offset":2}"#)?;
//! assert_eq!(std::fs::read(&path)?, br#"{"events":2,"next_offset":2}"#);
//! # Ok(())
//! # }
//! ```
//!
//! One writer per file: two processes replacing the same file at once share its temp file. The
//! directory must exist (it is not created here: a missing directory is a configuration error to
//! report, not to paper over). Reading needs nothing special: a plain read sees a whole file.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::error::{IoStep, OffsetStoreError};

/// Appended to a file's name for its temporary file (`snapshot.json` → `snapshot.json.tmp`).
pub const TEMP_SUFFIX: &str = ".tmp";

/// The temporary file [`replace`] writes before renaming it over `path`. A crash can leave one
/// behind; it is never read, and the next replace truncates it.
pub fn temp_path(path: &Path) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(TEMP_SUFFIX);
    PathBuf::from(name)
}

/// Replaces the file at `path` with `bytes`, durably (steps 1–4 of the module docs). Blocks on
/// two fsyncs: call it from a blocking context, or use [`replace_async`].
///
/// Only returns `Ok` once the new bytes and the rename are on disk. On an error the file holds
/// its old bytes or the new ones (after a failed directory fsync: the new ones, not yet durable).
pub fn replace(path: &Path, bytes: &[u8]) -> Result<(), OffsetStoreError> {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    if path.file_name().is_none() {
        return Err(OffsetStoreError::io(
            IoStep::WriteTemp,
            path,
            io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"),
        ));
    }
    replace_via(&temp_path(path), path, dir, bytes)
}

/// [`replace`] on tokio's blocking pool.
pub async fn replace_async(
    path: impl Into<PathBuf>,
    bytes: Vec<u8>,
) -> Result<(), OffsetStoreError> {
    let path = path.into();
    tokio::task::spawn_blocking(move || replace(&path, &bytes)).await?
}

/// Steps 1–4 with the temp file and directory given: the offset store's layout names its own.
pub(crate) fn replace_via(
    temp_path: &Path,
    path: &Path,
    dir: &Path,
    bytes: &[u8],
) -> Result<(), OffsetStoreError> {
    let mut temp = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(temp_path)
        .map_err(|error| OffsetStoreError::io(IoStep::WriteTemp, temp_path, error))?;
    temp.write_all(bytes)
        .map_err(|error| OffsetStoreError::io(IoStep::WriteTemp, temp_path, error))?;
    temp.sync_all()
        .map_err(|error| OffsetStoreError::io(IoStep::SyncTemp, temp_path, error))?;
    drop(temp);
    fs::rename(temp_path, path)
        .map_err(|error| OffsetStoreError::io(IoStep::Rename, path, error))?;
    sync_directory(dir)
}

/// fsync of a directory: makes the creation, rename or removal of its entries durable.
pub fn sync_directory(dir: &Path) -> Result<(), OffsetStoreError> {
    File::open(dir)
        .and_then(|handle| handle.sync_all())
        .map_err(|error| OffsetStoreError::io(IoStep::SyncDirectory, dir, error))
}
