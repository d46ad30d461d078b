//! A WRITTEN or FORCED append that finds its partition idle — nothing queued, the log's lock
//! free — is appended on the caller's thread, not handed to the writer thread and back; a
//! FORCED one is synced there too (inside `block_in_place`), with the same fsync and the same
//! answer. Only a task of a multi-thread runtime does so: on a current-thread runtime
//! `block_in_place` would panic, and the append is queued as before.
//!
//! `PartitionStats::inline_appends` and `inline_syncs` count what was done on the caller's
//! thread; before inline appends existed every append went through the writer queue.

mod storage_support;

use std::sync::Arc;

use booblik_protocol::AckPolicy;
use storage_support::{MODES, config, open, partition, read_all, records};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn written_and_forced_appends_to_an_idle_partition_are_done_on_the_callers_thread() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let storage = open(&config(dir.path(), mode, 1024 * 1024)).unwrap();
        let partition = partition(&storage);
        storage_support::idle_after_a_first_batch(&partition).await;
        let before = partition.stats();

        // A spawned task: the test body itself runs in `block_on`, not on a worker thread.
        let appender = Arc::clone(&partition);
        let (written, forced) = tokio::spawn(async move {
            let written = appender
                .append(records(&[b"written"]), AckPolicy::Written)
                .await
                .unwrap()
                .unwrap();
            let forced = appender
                .append(records(&[b"forced"]), AckPolicy::Forced)
                .await
                .unwrap()
                .unwrap();
            (written, forced)
        })
        .await
        .unwrap();
        assert_eq!((written.base_offset, written.log_end_offset), (1, 2));
        assert_eq!((forced.base_offset, forced.log_end_offset), (2, 3));

        let after = partition.stats();
        assert_eq!(
            after.inline_appends - before.inline_appends,
            2,
            "{mode:?}: both appends were written on the caller's thread"
        );
        assert_eq!(
            after.inline_syncs - before.inline_syncs,
            1,
            "{mode:?}: the FORCED one was synced there"
        );
        assert_eq!(after.fsyncs - before.fsyncs, 1, "{mode:?}: one fsync");
        assert_eq!(after.forced_groups - before.forced_groups, 1, "{mode:?}");
        assert_eq!(after.appended_records - before.appended_records, 2);
        assert_eq!(after.queued_appends, 0);
        assert_eq!(
            read_all(&partition),
            vec![
                (0, b"first".to_vec()),
                (1, b"written".to_vec()),
                (2, b"forced".to_vec())
            ]
        );
        storage.close().unwrap();
    }
}

#[tokio::test]
async fn on_a_current_thread_runtime_every_append_goes_through_the_writer() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let storage = open(&config(dir.path(), mode, 1024 * 1024)).unwrap();
        let partition = partition(&storage);
        let before = partition.stats();
        for ack in [AckPolicy::Written, AckPolicy::Forced] {
            let appender = Arc::clone(&partition);
            tokio::spawn(async move { appender.append(records(&[b"queued"]), ack).await })
                .await
                .unwrap()
                .unwrap();
        }
        let stats = partition.stats();
        assert_eq!(
            (stats.inline_appends, stats.inline_syncs),
            (0, 0),
            "{mode:?}"
        );
        assert_eq!(stats.high_watermark, 2);
        assert_eq!(
            stats.fsyncs - before.fsyncs,
            1,
            "{mode:?}: the FORCED append's group commit"
        );
        storage.close().unwrap();
    }
}
