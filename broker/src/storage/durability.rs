//! Every fsync the storage issues, in one place.
//!
//! Going through one type does three things: it counts the calls (metrics, stats), it lets tests
//! inject a failure ([`TestHooks::fail_next_fsync`], [`TestHooks::fail_next_directory_fsync`]),
//! and it keeps the rules in one spot:
//!
//! * segment data: `fdatasync` (`File::sync_data`) — it also persists the file size, which is
//!   all the metadata a reader needs; in MAPPED mode it follows an `msync` of the dirty range;
//! * a truncation during recovery: `fsync` (`File::sync_all`);
//! * a created, renamed or deleted segment: `fsync` of the directory, without which the new name
//!   may not survive a power loss even though the file's data does.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use super::error::{IoContext, StorageError};
use super::hooks::TestHooks;
use super::metrics::PartitionMetrics;

/// The fsync seam of one partition.
#[derive(Debug, Clone)]
pub(crate) struct Durability {
    hooks: Arc<TestHooks>,
    metrics: Arc<PartitionMetrics>,
}

impl Durability {
    pub(crate) fn new(hooks: Arc<TestHooks>, metrics: Arc<PartitionMetrics>) -> Self {
        Self { hooks, metrics }
    }

    /// `fdatasync` of a segment file.
    pub(crate) fn sync_data(&self, file: &File, path: &Path) -> Result<(), StorageError> {
        self.call(|| file.sync_data())
            .context(|| format!("fdatasync of {}", path.display()))
    }

    /// `fsync` of a file whose size was changed by recovery.
    pub(crate) fn sync_all(&self, file: &File, path: &Path) -> Result<(), StorageError> {
        self.call(|| file.sync_all())
            .context(|| format!("fsync of {}", path.display()))
    }

    /// `fsync` of a directory, making created, renamed and removed names durable.
    pub(crate) fn sync_dir(&self, dir: &Path) -> Result<(), StorageError> {
        self.call(|| match self.hooks.take_directory_fsync_failure() {
            Some(injected) => Err(injected),
            None => File::open(dir)?.sync_all(),
        })
        .context(|| format!("fsync of directory {}", dir.display()))
    }

    fn call(&self, sync: impl FnOnce() -> std::io::Result<()>) -> std::io::Result<()> {
        self.metrics.fsynced();
        match self.hooks.take_fsync_failure() {
            Some(injected) => Err(injected),
            None => sync(),
        }
    }
}
