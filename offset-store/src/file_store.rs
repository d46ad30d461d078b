//! [`FileOffsetStore`]: one small crash-safe file per (consumer, topic, partition).
//!
//! This module is the async front: it decides *when* file work may run, and
//! [`crate::durable`] does it. Two rules:
//!
//! * **Different keys never wait for each other.** Each key has its own async mutex; the work
//!   runs on tokio's blocking pool, so one key's fsync does not hold up another key's save (or
//!   the async worker threads).
//! * **Saves for one key are ordered: a later save never loses to an earlier one.** Each save
//!   takes a sequence number from its key *before* queueing for the key's mutex, and the file
//!   work checks it under the mutex: if a later save has already reached the disk, the earlier
//!   one returns `Ok` without writing (the position it would have written is superseded). The
//!   mutex guard is moved into the blocking task, so a caller that drops (cancels) its save
//!   future cannot let the next save race the orphaned write.
//!
//! Several processes may share one directory (the demo's consumers share a volume) as long as
//! each key has a single writer process. That is also why stale temp files are not swept at
//! `open`: another process may be in the middle of a save. A key's stale temp file is removed
//! when this process first touches the key, and is never read in any case.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::durable;
use crate::error::OffsetStoreError;
use crate::key::OffsetKey;
use crate::layout::{self, KeyPaths};
use crate::store::OffsetStore;

/// A durable [`OffsetStore`] in a directory. See the [crate docs](crate) for the layout, the
/// file format, the cost of a save and how often to save.
///
/// Needs a tokio runtime (it uses `spawn_blocking`). Cheap to share: wrap it in an `Arc`.
pub struct FileOffsetStore {
    root: PathBuf,
    /// One entry per key this store has touched; a consumer touches a handful.
    slots: Mutex<HashMap<OffsetKey, Arc<KeySlot>>>,
}

/// The per-key ordering state.
#[derive(Debug, Default)]
struct KeySlot {
    /// The sequence number of the next save, taken before queueing for `state`.
    next_seq: AtomicU64,
    /// Held for the whole file operation of a load or save, including its blocking part.
    state: Arc<tokio::sync::Mutex<KeyState>>,
}

/// What this process knows about one key's files. Only touched under [`KeySlot::state`].
#[derive(Debug, Default)]
struct KeyState {
    /// A stale temp file from an earlier crash has been looked for and removed.
    stale_temp_removed: bool,
    /// The key's directories exist and their entries are durable.
    directories_durable: bool,
    /// Sequence number of the latest save that reached the disk.
    last_saved_seq: Option<u64>,
}

impl KeyState {
    /// Housekeeping on the first touch of a key in this process.
    fn remove_stale_temp_once(&mut self, paths: &KeyPaths) {
        if !self.stale_temp_removed {
            durable::remove_stale_temp(paths);
            self.stale_temp_removed = true;
        }
    }
}

impl FileOffsetStore {
    /// Opens (creating it durably if missing) the store in `dir`. Nothing else is read until a
    /// key is loaded, so opening is cheap whatever the directory holds.
    pub async fn open(dir: impl Into<PathBuf>) -> Result<Self, OffsetStoreError> {
        let root = dir.into();
        let root_for_task = root.clone();
        run_blocking(move || durable::create_root(&root_for_task)).await?;
        tracing::debug!(dir = %root.display(), "opened offset store");
        Ok(Self {
            root,
            slots: Mutex::new(HashMap::new()),
        })
    }

    /// The store's directory, as given to [`FileOffsetStore::open`].
    pub fn dir(&self) -> &Path {
        &self.root
    }

    /// The file that holds (or will hold) the position of the key. For operators and tests:
    /// an error about a file names this path.
    pub fn file_path(
        &self,
        consumer: &str,
        topic: &str,
        partition: i32,
    ) -> Result<PathBuf, OffsetStoreError> {
        let key = OffsetKey::new(consumer, topic, partition)?;
        Ok(KeyPaths::new(&self.root, &key).file)
    }

    /// Every key with a saved position, sorted, read back from the file names (entries that
    /// are not ours are skipped). Does not read the files: [`OffsetStore::load`] each key for
    /// its value.
    pub async fn keys(&self) -> Result<Vec<OffsetKey>, OffsetStoreError> {
        let root = self.root.clone();
        run_blocking(move || layout::list_keys(&root)).await
    }

    fn slot(&self, key: &OffsetKey) -> Arc<KeySlot> {
        // The map lock is held only for a lookup or insert, never across an await or file
        // work, and a panic cannot leave the map half-updated, so poisoning is ignored.
        let mut slots = self
            .slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(slots.entry(key.clone()).or_default())
    }
}

impl fmt::Debug for FileOffsetStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileOffsetStore")
            .field("dir", &self.root)
            .finish_non_exhaustive()
    }
}

/// Runs blocking file work on tokio's blocking pool.
async fn run_blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, OffsetStoreError> + Send + 'static,
) -> Result<T, OffsetStoreError> {
    tokio::task::spawn_blocking(work).await?
}

#[async_trait]
impl OffsetStore for FileOffsetStore {
    async fn load(
        &self,
        consumer: &str,
        topic: &str,
        partition: i32,
    ) -> Result<Option<i64>, OffsetStoreError> {
        let key = OffsetKey::new(consumer, topic, partition)?;
        let paths = KeyPaths::new(&self.root, &key);
        // Under the key's mutex, so a load sees the result of every save that returned before
        // it, even one whose caller was cancelled while its write was still running.
        let state = Arc::clone(&self.slot(&key).state).lock_owned().await;
        run_blocking(move || {
            let mut state = state;
            state.remove_stale_temp_once(&paths);
            durable::read_offset(&paths, &key)
        })
        .await
    }

    async fn save(
        &self,
        consumer: &str,
        topic: &str,
        partition: i32,
        offset: i64,
    ) -> Result<(), OffsetStoreError> {
        let key = OffsetKey::new(consumer, topic, partition)?;
        if offset < 0 {
            return Err(OffsetStoreError::NegativeOffset { key, offset });
        }
        let paths = KeyPaths::new(&self.root, &key);
        let root = self.root.clone();
        let slot = self.slot(&key);
        let seq = slot.next_seq.fetch_add(1, Ordering::Relaxed);
        let state = Arc::clone(&slot.state).lock_owned().await;
        run_blocking(move || {
            let mut state = state;
            if state.last_saved_seq.is_some_and(|saved| saved > seq) {
                tracing::debug!(%key, offset, seq, "save superseded by a later one already on disk");
                return Ok(());
            }
            state.remove_stale_temp_once(&paths);
            if !state.directories_durable {
                durable::make_directories_durable(&root, &paths)?;
                state.directories_durable = true;
            }
            durable::write_offset(&paths, &key, offset)?;
            state.last_saved_seq = Some(seq);
            tracing::trace!(%key, offset, seq, "saved offset");
            Ok(())
        })
        .await
    }
}
