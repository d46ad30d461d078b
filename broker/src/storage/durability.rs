//! Every fsync the storage issues, in one place, and the partition's handle on its
//! [`StorageIo`].
//!
//! Going through one type does two things: it counts the calls (metrics, stats), and it keeps
//! the rules in one spot:
//!
//! * segment data: `fdatasync` — it also persists the file size, which is all the metadata a
//!   reader needs; in MAPPED mode it follows an `msync` of the dirty range;
//! * a truncation during recovery: `fsync`;
//! * a created, renamed or deleted segment: `fsync` of the directory, without which the new name
//!   may not survive a power loss even though the file's data does.
//!
//! The calls themselves go through the partition's [`StorageIo`] (the real file system, or a
//! test's simulation): there is no test branch here.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use super::error::{IoContext, StorageError};
use super::io::StorageIo;
use super::metrics::PartitionMetrics;

/// The fsync seam of one partition, and its I/O.
#[derive(Debug, Clone)]
pub(crate) struct Durability {
    io: Arc<dyn StorageIo>,
    metrics: Arc<PartitionMetrics>,
}

impl Durability {
    pub(crate) fn new(io: Arc<dyn StorageIo>, metrics: Arc<PartitionMetrics>) -> Self {
        Self { io, metrics }
    }

    /// The I/O every other call of the partition's write and recovery path goes through.
    pub(crate) fn io(&self) -> &Arc<dyn StorageIo> {
        &self.io
    }

    /// The partition's counters.
    pub(crate) fn metrics(&self) -> &PartitionMetrics {
        &self.metrics
    }

    /// `fdatasync` of a segment file.
    pub(crate) fn sync_data(&self, file: &File, path: &Path) -> Result<(), StorageError> {
        self.metrics.fsynced();
        self.io
            .sync_data(file)
            .context(|| format!("fdatasync of {}", path.display()))
    }

    /// `fsync` of a file whose size was changed by recovery.
    pub(crate) fn sync_all(&self, file: &File, path: &Path) -> Result<(), StorageError> {
        self.metrics.fsynced();
        self.io
            .sync_all(file)
            .context(|| format!("fsync of {}", path.display()))
    }

    /// `fsync` of a directory, making created, renamed and removed names durable.
    pub(crate) fn sync_dir(&self, dir: &Path) -> Result<(), StorageError> {
        self.metrics.fsynced();
        self.io
            .sync_dir(dir)
            .context(|| format!("fsync of directory {}", dir.display()))
    }
}
