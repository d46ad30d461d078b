//! Retention by size and by age drops whole sealed segments, never the active one, and moves
//! the log start offset.

mod storage_support;

use std::time::{Duration, SystemTime};

use booblik_broker::storage::StorageError;
use booblik_protocol::AckPolicy;
use storage_support::{
    MODES, config, open, partition, partition_dir, payload, read_all, records, segment_files,
};

/// 100-byte payloads (108 bytes on disk), 5 per 600-byte segment. The last append is FORCED: its
/// fsync waits for the seal of the segment before (MAPPED mode seals on a thread of its own,
/// which holds the segment, and so its file, until it is done).
async fn fill(partition: &booblik_broker::storage::Partition, count: u64) {
    for n in 0..count {
        let ack = if n + 1 == count {
            AckPolicy::Forced
        } else {
            AckPolicy::Written
        };
        partition
            .append(records(&[payload(n, 100)]), ack)
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn size_retention_of_one_byte_keeps_only_the_active_segment_and_moves_the_log_start() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(dir.path(), mode, 600);
        config.retention_bytes = Some(1);
        let storage = open(&config).unwrap();
        let partition = partition(&storage);
        fill(&partition, 12).await;
        assert_eq!(partition.stats().segments, 3);

        assert_eq!(partition.enforce_retention().await.unwrap(), 2, "{mode:?}");
        assert_eq!(partition.stats().segments, 1);
        assert_eq!(partition.log_start_offset(), 10, "{mode:?}");
        assert_eq!(partition.high_watermark(), 12);
        // The dropped files are gone from the directory.
        let names: Vec<_> = std::fs::read_dir(partition_dir(dir.path()))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["00000000000000000010.log"], "{mode:?}");
        // Reading below the new start is out of range; what is left is intact.
        assert!(matches!(
            partition.read(0, 100),
            Err(StorageError::OffsetOutOfRange {
                log_start_offset: 10,
                ..
            })
        ));
        let log = read_all(&partition);
        assert_eq!(log, vec![(10, payload(10, 100)), (11, payload(11, 100))]);
        // Enforcing again changes nothing: the active segment is never dropped.
        assert_eq!(partition.enforce_retention().await.unwrap(), 0);
        storage.close().unwrap();

        // The new start survives a restart.
        let storage = open(&config).unwrap();
        assert_eq!(partition_of(&storage).log_start_offset(), 10, "{mode:?}");
        storage.close().unwrap();
    }
}

#[tokio::test]
async fn size_retention_keeps_the_newest_segments_that_fit_the_limit() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(dir.path(), mode, 600);
        // Segments of 540, 540 and 216 bytes (12 records); a 1000-byte limit drops one.
        config.retention_bytes = Some(1000);
        let storage = open(&config).unwrap();
        let partition = partition(&storage);
        fill(&partition, 12).await;
        assert_eq!(partition.enforce_retention().await.unwrap(), 1, "{mode:?}");
        assert_eq!(partition.log_start_offset(), 5);
        storage.close().unwrap();
    }
}

#[tokio::test]
async fn age_retention_drops_sealed_segments_last_written_too_long_ago_but_never_the_active_one() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(dir.path(), mode, 600);
        config.retention_ms = Some(3_600_000);
        {
            let storage = open(&config).unwrap();
            fill(&partition_of(&storage), 12).await;
            storage.close().unwrap();
        }
        // Age the first segment and the active one by two hours; the middle one stays young.
        let files = segment_files(dir.path());
        let two_hours_ago = SystemTime::now() - Duration::from_hours(2);
        for file in [&files[0], &files[2]] {
            std::fs::File::options()
                .write(true)
                .open(file)
                .unwrap()
                .set_modified(two_hours_ago)
                .unwrap();
        }
        let storage = open(&config).unwrap();
        let partition = partition_of(&storage);
        assert_eq!(partition.enforce_retention().await.unwrap(), 1, "{mode:?}");
        assert_eq!(partition.log_start_offset(), 5, "{mode:?}");
        assert_eq!(partition.stats().segments, 2);

        // Age the middle one as well: it goes, the (old) active segment stays.
        let files = segment_files(dir.path());
        std::fs::File::options()
            .write(true)
            .open(&files[0])
            .unwrap()
            .set_modified(two_hours_ago)
            .unwrap();
        assert_eq!(partition.enforce_retention().await.unwrap(), 1, "{mode:?}");
        assert_eq!(partition.log_start_offset(), 10);
        assert_eq!(partition.stats().segments, 1);
        assert_eq!(read_all(&partition).len(), 2);
        storage.close().unwrap();
    }
}

#[tokio::test]
async fn the_writer_applies_retention_on_its_own_every_check_interval() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(dir.path(), mode, 600);
        config.retention_bytes = Some(1);
        config.retention_check_interval_ms = 10;
        let storage = open(&config).unwrap();
        let partition = partition(&storage);
        fill(&partition, 12).await;
        // A named bound on the wait: 10 s in 1 ms steps.
        let mut waited = 0;
        while partition.log_start_offset() != 10 && waited < 10_000 {
            tokio::time::sleep(Duration::from_millis(1)).await;
            waited += 1;
        }
        assert_eq!(partition.log_start_offset(), 10, "{mode:?}");
        storage.close().unwrap();
    }
}

fn partition_of(
    storage: &booblik_broker::storage::Storage,
) -> std::sync::Arc<booblik_broker::storage::Partition> {
    partition(storage)
}
