//! [`Storage`]: every partition of every topic, opened together and closed together.
//!
//! The set of topics is fixed when the storage opens (the protocol has no topic creation). The
//! data directory is locked (`<data_dir>/.lock`, an advisory `flock`) until the storage is
//! closed, so two brokers can never write the same segments — which is also what makes the
//! memory mappings of MAPPED mode safe.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;
use std::sync::{Arc, Mutex};

use booblik_protocol::TopicName;
use tracing::warn;

use super::config::StorageConfig;
use super::error::{IoContext, StorageError};
use super::partition::Partition;
use super::writer::QueueBudget;

/// Name of the lock file in the data directory.
pub const LOCK_FILE_NAME: &str = ".lock";

/// All partitions of all topics.
#[derive(Debug)]
pub struct Storage {
    config: StorageConfig,
    /// Keyed by name (so lookups by `&str` work); iteration is sorted by name.
    topics: BTreeMap<String, TopicPartitions>,
    /// Held (locked) until the storage is closed.
    lock: Mutex<Option<File>>,
}

#[derive(Debug)]
struct TopicPartitions {
    name: TopicName,
    partitions: Vec<Arc<Partition>>,
}

impl Storage {
    /// Creates the data directory if needed, locks it, opens (recovering) every partition of
    /// `topics` (`(name, partition count)`) and starts one writer thread per partition. Blocking;
    /// callable inside or outside a tokio runtime (inside, prefer `spawn_blocking`: recovery
    /// reads files).
    pub fn open(
        config: StorageConfig,
        topics: &[(TopicName, u32)],
    ) -> Result<Storage, StorageError> {
        config.validate()?;
        config
            .io
            .create_dir_all(&config.data_dir)
            .context(|| format!("creating data directory {}", config.data_dir.display()))?;
        let lock = lock_data_dir(&config.data_dir)?;
        // `validate` keeps the budget within `u32`; saturate rather than trust that here.
        let budget = QueueBudget::new(u32::try_from(config.writer_queue_bytes).unwrap_or(u32::MAX));
        let mut storage = Storage {
            config,
            topics: BTreeMap::new(),
            lock: Mutex::new(Some(lock)),
        };
        for (name, count) in topics {
            if *count == 0 || i32::try_from(*count).is_err() {
                return Err(StorageError::InvalidConfig {
                    reason: format!("topic {name} has {count} partitions; use 1..={}", i32::MAX),
                });
            }
            if storage.topics.contains_key(name.as_str()) {
                return Err(StorageError::InvalidConfig {
                    reason: format!("topic {name} is listed twice"),
                });
            }
            storage.topics.insert(
                name.as_str().to_owned(),
                TopicPartitions {
                    name: name.clone(),
                    partitions: Vec::with_capacity(*count as usize),
                },
            );
            // On an error, dropping `storage` closes the partitions opened so far.
            for id in 0..*count as i32 {
                let partition = Partition::open(name, id, &storage.config, &budget)?;
                storage
                    .topics
                    .get_mut(name.as_str())
                    .expect("inserted above")
                    .partitions
                    .push(Arc::new(partition));
            }
        }
        Ok(storage)
    }

    /// The partition `partition` of `topic`, if both exist.
    pub fn partition(&self, topic: &str, partition: i32) -> Option<&Arc<Partition>> {
        let topic = self.topics.get(topic)?;
        topic.partitions.get(usize::try_from(partition).ok()?)
    }

    /// Every topic with its partitions: topics sorted by name, partitions by id.
    pub fn topics(&self) -> impl Iterator<Item = (&TopicName, &[Arc<Partition>])> {
        self.topics
            .values()
            .map(|topic| (&topic.name, topic.partitions.as_slice()))
    }

    /// The configuration the storage was opened with.
    pub fn config(&self) -> &StorageConfig {
        &self.config
    }

    /// Blocking: drains every writer queue, fsyncs everything, stops the writers and releases the
    /// data directory lock (so the directory can be opened again). Idempotent. Returns the first
    /// failure (a poisoned partition, a failed final sync) after closing all.
    pub fn close(&self) -> Result<(), StorageError> {
        let mut result = Ok(());
        for topic in self.topics.values() {
            for partition in &topic.partitions {
                if let Err(error) = partition.close()
                    && result.is_ok()
                {
                    result = Err(error);
                }
            }
        }
        // Every writer has stopped: nothing of ours writes the directory any more.
        drop(
            self.lock
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take(),
        );
        result
    }
}

impl Drop for Storage {
    /// Closes a storage nobody closed. [`Storage::close`] waits for every writer's final fsync,
    /// so on a runtime thread the writers are told to stop at once and joined by a thread of
    /// their own, which releases the data directory lock after the last one: the directory stays
    /// locked until nothing of this storage writes it.
    fn drop(&mut self) {
        if tokio::runtime::Handle::try_current().is_err() {
            if let Err(error) = self.close() {
                warn!(%error, "closing storage on drop failed");
            }
            return;
        }
        let writers: Vec<_> = self
            .topics
            .values()
            .flat_map(|topic| topic.partitions.iter())
            .filter_map(|partition| partition.begin_close())
            .collect();
        let lock = self
            .lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let join = move || {
            for writer in writers {
                match writer.join() {
                    Ok(Ok(())) => {}
                    Ok(Err(error)) => warn!(%error, "closing storage on drop failed"),
                    Err(_) => warn!("a writer thread panicked"),
                }
            }
            drop(lock);
        };
        if let Err(error) = std::thread::Builder::new()
            .name("storage-close".into())
            .spawn(join)
        {
            warn!(%error, "could not start a thread to close the storage; its writers stop on their own");
        }
    }
}

fn lock_data_dir(data_dir: &Path) -> Result<File, StorageError> {
    let path = data_dir.join(LOCK_FILE_NAME);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .context(|| format!("opening lock file {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(StorageError::DataDirLocked { path }),
        Err(TryLockError::Error(source)) => Err(StorageError::io(
            format!("locking {}", path.display()),
            source,
        )),
    }
}
