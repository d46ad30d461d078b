//! A log survives a restart and continues where it stopped: every segment is found and ordered,
//! the high watermark is the same, and the next append gets the next offset.

mod storage_support;

use booblik_broker::storage::WriteMode;
use booblik_protocol::AckPolicy;
use storage_support::{MODES, config, open, partition, payload, read_all, records, segment_files};

#[tokio::test]
async fn a_partition_of_three_segments_and_12_records_reopens_whole_and_continues_at_12() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        // 100-byte payloads take 108 bytes; 5 fit a 600-byte segment: 12 records → 3 segments.
        let config = config(dir.path(), mode, 600);
        let written: Vec<Vec<u8>> = (0..12).map(|n| payload(n, 100)).collect();
        {
            let storage = open(&config).unwrap();
            let partition = partition(&storage);
            for record in &written {
                partition
                    .append(records(&[record]), AckPolicy::Written)
                    .await
                    .unwrap();
            }
            assert_eq!(partition.stats().segments, 3, "{mode:?}");
            storage.close().unwrap();
        }
        assert_eq!(segment_files(dir.path()).len(), 3);

        let storage = open(&config).unwrap();
        let partition = partition(&storage);
        assert_eq!(partition.stats().segments, 3, "{mode:?}");
        assert_eq!(partition.high_watermark(), 12, "{mode:?}");
        assert_eq!(partition.log_start_offset(), 0);
        let appended = partition
            .append(records(&[b"thirteenth"]), AckPolicy::Written)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(appended.base_offset, 12, "{mode:?}");
        let log = read_all(&partition);
        assert_eq!(log.len(), 13);
        for (n, record) in written.iter().enumerate() {
            assert_eq!(&log[n], &(n as i64, record.clone()), "{mode:?}");
        }
        storage.close().unwrap();
    }
}

#[tokio::test]
async fn a_log_written_in_one_mode_reopens_in_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let mut expected = Vec::new();
    for (round, mode) in [
        WriteMode::Mapped,
        WriteMode::File,
        WriteMode::Mapped,
        WriteMode::File,
    ]
    .into_iter()
    .enumerate()
    {
        let storage = open(&config(dir.path(), mode, 4096)).unwrap();
        let partition = partition(&storage);
        assert_eq!(read_all(&partition), expected, "round {round} ({mode:?})");
        for n in 0..30 {
            let id = round as u64 * 100 + n;
            let appended = partition
                .append(records(&[payload(id, 50)]), AckPolicy::Written)
                .await
                .unwrap()
                .unwrap();
            expected.push((appended.base_offset, payload(id, 50)));
        }
        storage.close().unwrap();
    }
}

#[tokio::test]
async fn records_queued_with_ack_none_are_on_disk_after_close() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let config = config(dir.path(), mode, 1 << 20);
        {
            let storage = open(&config).unwrap();
            let partition = partition(&storage);
            for n in 0..50 {
                let answer = partition
                    .append(records(&[payload(n, 10)]), AckPolicy::None)
                    .await
                    .unwrap();
                assert_eq!(answer, None);
            }
            storage.close().unwrap();
            assert!(matches!(
                partition
                    .append(records(&[b"late"]), AckPolicy::Written)
                    .await,
                Err(booblik_broker::storage::StorageError::Closed)
            ));
            // Closing again is harmless.
            storage.close().unwrap();
        }
        let storage = open(&config).unwrap();
        let log = read_all(&partition(&storage));
        let expected: Vec<_> = (0..50).map(|n| (n as i64, payload(n, 10))).collect();
        assert_eq!(log, expected, "{mode:?}");
        storage.close().unwrap();
    }
}
