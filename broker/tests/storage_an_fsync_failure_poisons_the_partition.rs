//! An fsync failure poisons the partition: the FORCED appends it was meant to cover fail, and
//! every later append fails loudly with the cause instead of pretending to succeed.
//!
//! A healthy disk does not fail fsync on demand, so the failure is injected through the storage's
//! storage's I/O seam (`SimIo::fail_next_fsync()`, or `fail_next_directory_fsync()` for the
//! directory fsync of a segment roll); the writer's handling of the error is the real code path.

mod storage_support;

use booblik_broker::storage::test_io::SimIo;
use booblik_broker::storage::{Appended, StorageError, WriteMode};
use booblik_protocol::AckPolicy;
use storage_support::{MODES, config_with_sim, open, partition, records};

#[tokio::test]
async fn a_failed_fsync_fails_its_forced_append_and_refuses_every_later_append() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let (config, disk) = config_with_sim(dir.path(), mode, 1 << 20);
        let storage = open(&config).unwrap();
        let partition = partition(&storage);
        partition
            .append(records(&[b"before"]), AckPolicy::Forced)
            .await
            .unwrap();

        disk.fail_next_fsync();
        let cause = match partition
            .append(records(&[b"doomed"]), AckPolicy::Forced)
            .await
        {
            Err(StorageError::Poisoned { cause }) => cause,
            other => panic!("{mode:?}: expected Poisoned, got {other:?}"),
        };
        assert!(cause.contains("injected fsync failure"), "{cause}");
        assert!(cause.contains("fdatasync"), "{cause}");
        assert!(partition.stats().poisoned);

        // Later appends fail at once, whatever their ack policy, and name the first cause.
        for ack in [AckPolicy::None, AckPolicy::Written, AckPolicy::Forced] {
            match partition.append(records(&[b"after"]), ack).await {
                Err(StorageError::Poisoned { cause: later }) => assert_eq!(later, cause),
                other => panic!("{mode:?} {ack:?}: expected Poisoned, got {other:?}"),
            }
        }
        // Reads of what was written before still work.
        assert_eq!(storage_support::read_record(&partition, 0), b"before");
        // Closing reports the poisoning instead of claiming a clean stop.
        assert!(
            matches!(storage.close(), Err(StorageError::Poisoned { .. })),
            "{mode:?}"
        );
    }
}

/// Appends one record to a segment with room for about one, arms a failure with `arm`, then
/// appends a FORCED record that does not fit, so the writer rolls: it seals the segment (an
/// fsync), creates the next one and fsyncs the directory — in MAPPED mode on the sealing thread,
/// which the FORCED answer waits for (`storage/log.rs`, § The seal in the background). `check`
/// judges that append's answer; after it the partition must be poisoned — later appends
/// refused, nothing past the second record readable, and closing reports the failure.
async fn a_roll_that_fails(
    arm: impl Fn(&SimIo),
    check: impl Fn(WriteMode, &Result<Option<Appended>, StorageError>),
) {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let (config, disk) = config_with_sim(dir.path(), mode, 100);
        let storage = open(&config).unwrap();
        let partition = partition(&storage);
        partition
            .append(records(&[[1u8; 60]]), AckPolicy::Written)
            .await
            .unwrap();
        arm(&disk);
        let failed = partition
            .append(records(&[[2u8; 60]]), AckPolicy::Forced)
            .await;
        check(mode, &failed);
        assert!(partition.stats().poisoned, "{mode:?}");
        assert!(matches!(
            partition
                .append(records(&[[3u8; 1]]), AckPolicy::Written)
                .await,
            Err(StorageError::Poisoned { .. })
        ));
        // FILE mode seals before it writes the record; MAPPED mode writes it into the next
        // segment and then waits for the seal that fails, so the record is there, unanswered.
        let written = match mode {
            WriteMode::File => 1,
            WriteMode::Mapped => 2,
        };
        assert_eq!(partition.high_watermark(), written, "{mode:?}");
        assert!(storage.close().is_err());
    }
}

/// The failure a rolling append was answered with: the I/O error itself, or — when the
/// partition noticed the failed seal before it answered (MAPPED mode: the sealing thread had
/// finished) — the poisoning that names it.
fn failure_of(mode: WriteMode, failed: &Result<Option<Appended>, StorageError>) -> String {
    match failed {
        Err(error @ StorageError::Io { .. }) => error.to_string(),
        Err(StorageError::Poisoned { cause }) => cause.clone(),
        other => panic!("{mode:?}: expected an I/O error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_failed_fsync_while_rolling_poisons_the_partition() {
    // The roll's first fsync fails: the sealed segment's (FILE mode), the next segment's size
    // (MAPPED mode, on the sealing thread).
    a_roll_that_fails(SimIo::fail_next_fsync, |mode, failed| {
        let message = failure_of(mode, failed);
        assert!(message.contains("fdatasync"), "{mode:?}: {message}");
        assert!(
            message.contains("injected fsync failure"),
            "{mode:?}: {message}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_failed_directory_fsync_after_a_roll_poisons_the_partition() {
    // A new segment's name survives a power loss only once its directory is fsynced (SPEC §3),
    // so the roll must fsync the directory — and a failure of that fsync must poison like any
    // other. Only directory fsyncs are failed here: if the roll skipped its directory fsync, the
    // append would succeed and this test fail.
    a_roll_that_fails(SimIo::fail_next_directory_fsync, |mode, failed| {
        let message = failure_of(mode, failed);
        assert!(
            message.contains("fsync of directory"),
            "{mode:?}: {message}"
        );
        assert!(
            message.contains("injected directory fsync failure"),
            "{mode:?}: {message}"
        );
    })
    .await;
}
