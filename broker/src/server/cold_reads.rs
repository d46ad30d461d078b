//! The one way a session reads the disk: on tokio's blocking pool, bounded and counted.
//!
//! A runtime thread must not sleep on a disk read, or every session it serves waits with it.
//! Every read the page cache cannot answer at once — a FETCH's lookup of its record (the long
//! poll's included), a heap FETCH's bytes, a zero-copy FETCH whose bytes left the cache — goes
//! through [`ColdReads::run`]: at most [`MAX_CONCURRENT_COLD_READS`] at once, each counted in
//! `booblik_fetch_cold_reads_total`.

use std::sync::Arc;

use tokio::sync::Semaphore;

use super::metrics as m;
use super::session::SessionError;
use crate::storage::Partition;

/// The most reads the broker runs at once on tokio's blocking pool because their bytes were not
/// in the page cache. Bounds the blocking threads (tokio allows 512) and the disk queue that
/// replays of old data can build; further cold reads wait for a permit, in their own session
/// only — other sessions go on.
pub const MAX_CONCURRENT_COLD_READS: usize = 32;

/// The bounded dispatcher of blocking reads; one per broker.
#[derive(Debug)]
pub(crate) struct ColdReads {
    permits: Arc<Semaphore>,
}

impl ColdReads {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(limit)),
        }
    }

    /// Runs `read` on tokio's blocking pool, where waiting for the disk holds up no session but
    /// this one, holding one permit for as long as it runs (the permit moves into the task: a
    /// session dropped meanwhile does not free it early). The caller waits for a permit like
    /// for the read itself; a broker shutting down waits for the cold reads already queued.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        partition: &Arc<Partition>,
        read: impl FnOnce(&Partition) -> T + Send + 'static,
    ) -> Result<T, SessionError> {
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .expect("the cold-read semaphore is never closed");
        metrics::counter!(m::FETCH_COLD_READS).increment(1);
        let partition = Arc::clone(partition);
        let task = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            partition.test_hooks().pass_cold_read_gate();
            read(&partition)
        });
        task.await.map_err(|join| {
            SessionError::Io(std::io::Error::other(format!(
                "a read on the blocking pool failed: {join}"
            )))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::parse_topics;
    use crate::storage::{Storage, StorageConfig};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_more_reads_than_the_limit_run_at_once_and_the_rest_wait_their_turn() {
        const LIMIT: usize = 2;
        const READS: usize = 5;
        let dir = tempfile::tempdir().unwrap();
        let config = StorageConfig {
            data_dir: dir.path().to_path_buf(),
            ..StorageConfig::default()
        };
        let storage = Storage::open(config, &parse_topics("t:1").unwrap()).unwrap();
        let partition = Arc::clone(storage.partition("t", 0).unwrap());
        let dispatcher = Arc::new(ColdReads::new(LIMIT));
        let hold = partition.test_hooks().hold_cold_reads();
        let mut reads = Vec::new();
        for n in 0..READS {
            let (dispatcher, partition) = (Arc::clone(&dispatcher), Arc::clone(&partition));
            reads.push(tokio::spawn(async move {
                dispatcher.run(&partition, move |_| n).await.unwrap()
            }));
        }
        let hooks = partition.test_hooks();
        while hooks.cold_reads_held() < LIMIT {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // The others wait for a permit, not at the gate: give them time to (wrongly) get there.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(hooks.cold_reads_held(), LIMIT);
        drop(hold);
        let mut done = Vec::new();
        for read in reads {
            done.push(read.await.unwrap());
        }
        assert_eq!(done, (0..READS).collect::<Vec<_>>());
        storage.close().unwrap();
    }
}
