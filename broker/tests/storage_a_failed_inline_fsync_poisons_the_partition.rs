//! A FORCED append written inline whose fsync — done on the caller's thread — fails poisons the
//! partition exactly as the writer's failed group commit does: the append fails with
//! `Poisoned` and the cause, every later append fails at once with the same cause, what was
//! written before stays readable, and closing reports the poisoning.
//!
//! The failure is injected through the storage's I/O seam (`SimIo::fail_next_fsync`).

mod storage_support;

use std::sync::Arc;

use booblik_broker::storage::StorageError;
use booblik_protocol::AckPolicy;
use storage_support::{MODES, config_with_sim, open, partition, read_record, records};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_inline_fsync_fails_its_append_and_refuses_every_later_append() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let (config, disk) = config_with_sim(dir.path(), mode, 1 << 20);
        let storage = open(&config).unwrap();
        let partition = partition(&storage);

        storage_support::idle_after_a_first_batch(&partition).await;
        let appender = Arc::clone(&partition);
        let (cause, later) = tokio::spawn(async move {
            appender
                .append(records(&[b"before"]), AckPolicy::Forced)
                .await
                .unwrap();
            disk.fail_next_fsync();
            let cause = match appender
                .append(records(&[b"doomed"]), AckPolicy::Forced)
                .await
            {
                Err(StorageError::Poisoned { cause }) => cause,
                other => panic!("expected Poisoned, got {other:?}"),
            };
            let mut later = Vec::new();
            for ack in [AckPolicy::None, AckPolicy::Written, AckPolicy::Forced] {
                later.push((ack, appender.append(records(&[b"after"]), ack).await));
            }
            (cause, later)
        })
        .await
        .unwrap();

        let stats = partition.stats();
        assert_eq!(
            stats.inline_appends, 2,
            "{mode:?}: both FORCED batches were written on the caller's thread"
        );
        assert_eq!(
            stats.inline_syncs, 1,
            "{mode:?}: only the first inline fsync succeeded"
        );
        assert!(stats.poisoned, "{mode:?}");
        assert!(cause.contains("injected fsync failure"), "{cause}");
        assert!(cause.contains("fdatasync"), "{cause}");
        for (ack, result) in later {
            match result {
                Err(StorageError::Poisoned { cause: again }) => assert_eq!(again, cause),
                other => panic!("{mode:?} {ack:?}: expected Poisoned, got {other:?}"),
            }
        }
        assert_eq!(read_record(&partition, 1), b"before");
        assert!(
            matches!(storage.close(), Err(StorageError::Poisoned { .. })),
            "{mode:?}"
        );
    }
}
