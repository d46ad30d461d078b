//! A read slice pins its segment: retention removes the segment from the log at once (the log
//! start moves, its name ends in `.deleted`), but the file is unlinked only when the reader
//! drops the slice, so bytes being sent are never pulled from under a FETCH.

mod storage_support;

use booblik_protocol::{AckPolicy, RecordScanner};
use storage_support::{MODES, config, open, partition, partition_dir, payload, records};

#[tokio::test]
async fn a_segment_read_during_retention_stays_readable_until_its_slice_is_dropped() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(dir.path(), mode, 600);
        config.retention_bytes = Some(1);
        let storage = open(&config).unwrap();
        let partition = partition(&storage);
        for n in 0..12 {
            // The last append is FORCED: its fsync waits for the seal of the segment before
            // (MAPPED mode seals on a thread of its own, which holds the segment until it is
            // done), so the only pin left on a sealed segment is this test's read.
            let ack = if n == 11 {
                AckPolicy::Forced
            } else {
                AckPolicy::Written
            };
            partition
                .append(records(&[payload(n, 100)]), ack)
                .await
                .unwrap();
        }
        let pinned = partition.read(0, u32::MAX).unwrap();
        assert_eq!(pinned.segment_base_offset(), 0);

        assert_eq!(partition.enforce_retention().await.unwrap(), 2);
        assert_eq!(partition.log_start_offset(), 10);
        let dir_names = || {
            let mut names: Vec<String> = std::fs::read_dir(partition_dir(dir.path()))
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            names.sort();
            names
        };
        // The unpinned segment (base 5) is gone; the pinned one waits under its retired name.
        assert_eq!(
            dir_names(),
            [
                "00000000000000000000.log.deleted",
                "00000000000000000010.log"
            ],
            "{mode:?}"
        );
        // The pinned bytes are still whole and readable.
        let bytes = pinned.to_bytes().unwrap();
        let payloads: Vec<&[u8]> = RecordScanner::new(&bytes).map(|r| r.payload).collect();
        assert_eq!(payloads.len(), 5);
        assert_eq!(payloads[4], payload(4, 100).as_slice());

        drop(pinned);
        // Dropped on a runtime thread, so the unlink runs on the blocking pool: wait for it,
        // bounded (10 s in steps of 1 ms).
        for _ in 0..10_000 {
            if dir_names().len() == 1 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        assert_eq!(dir_names(), ["00000000000000000010.log"], "{mode:?}");
        storage.close().unwrap();
    }
}

#[tokio::test]
async fn a_retired_segment_left_behind_by_a_crash_is_removed_on_open() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let config = config(dir.path(), mode, 600);
        {
            let storage = open(&config).unwrap();
            let partition = partition(&storage);
            partition
                .append(records(&[b"x"]), AckPolicy::Written)
                .await
                .unwrap();
            storage.close().unwrap();
        }
        let leftover = partition_dir(dir.path()).join("00000000000000000000.log.deleted");
        std::fs::write(&leftover, b"old bytes").unwrap();
        let storage = open(&config).unwrap();
        assert!(!leftover.exists(), "{mode:?}");
        assert_eq!(partition(&storage).high_watermark(), 1);
        storage.close().unwrap();
    }
}
