//! An inline FORCED append's fsync does not hold the partition: its leader cuts what the fsync
//! covers under the log's lock and waits for the disk without it. While the disk holds that
//! fsync, a WRITTEN append is written inline and answered, and another FORCED one is written
//! inline and waits for its turn; the next leader's fsync then covers it. Two fsyncs in all:
//! one per turn, not one per append.
//!
//! With the lock held across the fsync, the WRITTEN append could not be written until the
//! disk answered (it would queue to the writer thread, which waits for the same lock).
//!
//! The disk is held through the storage's I/O seam (`SimIo::stall_fsyncs`).

mod storage_support;

use std::sync::Arc;
use std::time::Duration;

use booblik_protocol::AckPolicy;
use storage_support::{MODES, config_with_sim, open, partition, read_all, records};

/// How long the test waits for something that should take microseconds.
const PATIENCE: Duration = Duration::from_secs(5);

async fn wait_for_inline_appends(partition: &booblik_broker::storage::Partition, count: u64) {
    tokio::time::timeout(PATIENCE, async {
        while partition.stats().inline_appends < count {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{count} inline appends never happened"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_are_written_inline_while_an_inline_fsync_waits_for_the_disk() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let (config, disk) = config_with_sim(dir.path(), mode, 1 << 20);
        let storage = open(&config).unwrap();
        let partition = partition(&storage);
        // A first batch: in MAPPED mode it reserves the segment's first disk blocks
        // (`fallocate`), which is the writer thread's work.
        partition
            .append(records(&[b"first"]), AckPolicy::Written)
            .await
            .unwrap();
        storage_support::wait_until_idle(&partition).await;
        let before = partition.stats();
        let append = |payload: &'static [u8], ack| {
            let partition = Arc::clone(&partition);
            tokio::spawn(async move { partition.append(records(&[payload]), ack).await })
        };

        let stall = disk.stall_fsyncs();
        let forced_a = append(b"forced-a", AckPolicy::Forced);
        wait_for_inline_appends(&partition, before.inline_appends + 1).await;
        // Time for A to reach its fsync, which the disk now holds.
        tokio::time::sleep(Duration::from_millis(50)).await;

        let written_b = tokio::time::timeout(PATIENCE, append(b"written-b", AckPolicy::Written))
            .await
            .unwrap_or_else(|_| {
                panic!("{mode:?}: the WRITTEN append waited for another append's fsync")
            })
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(written_b.base_offset, 2, "{mode:?}");
        assert!(
            !forced_a.is_finished(),
            "{mode:?}: A is answered only after its fsync"
        );

        let forced_c = append(b"forced-c", AckPolicy::Forced);
        wait_for_inline_appends(&partition, before.inline_appends + 3).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(
            !forced_c.is_finished(),
            "{mode:?}: C is answered only after an fsync"
        );

        drop(stall);
        let forced_a = forced_a.await.unwrap().unwrap().unwrap();
        let forced_c = forced_c.await.unwrap().unwrap().unwrap();
        assert_eq!(forced_a.base_offset, 1, "{mode:?}");
        assert_eq!(forced_c.base_offset, 3, "{mode:?}");

        let after = partition.stats();
        assert_eq!(
            after.inline_appends - before.inline_appends,
            3,
            "{mode:?}: every append was written on its caller's thread"
        );
        assert_eq!(
            after.fsyncs - before.fsyncs,
            2,
            "{mode:?}: A's fsync, then one covering B and C"
        );
        assert_eq!(
            read_all(&partition),
            vec![
                (0, b"first".to_vec()),
                (1, b"forced-a".to_vec()),
                (2, b"written-b".to_vec()),
                (3, b"forced-c".to_vec()),
            ],
            "{mode:?}"
        );
        storage.close().unwrap();
    }
}
