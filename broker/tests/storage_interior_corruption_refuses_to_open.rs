//! Corruption with complete records after it is reported loudly — opening fails naming the file
//! and the byte position — instead of being silently truncated away with committed records:
//! damage in a segment that is not the last (every byte of it was fsynced when it was sealed),
//! and a missing segment. (Damage before a valid record in the *last* segment is what a power
//! loss leaves with out-of-order write-back; it is cut and quarantined:
//! `storage_damage_before_a_valid_record_in_the_last_segment_is_quarantined_then_cut.rs`.)

mod storage_support;

use std::os::unix::fs::FileExt;

use booblik_broker::storage::StorageError;
use booblik_protocol::AckPolicy;
use storage_support::{MODES, config, open, partition, payload, records, segment_files};

async fn write_records(
    dir: &std::path::Path,
    mode: booblik_broker::storage::WriteMode,
    count: u64,
    segment_bytes: u64,
) {
    let storage = open(&config(dir, mode, segment_bytes)).unwrap();
    let partition = partition(&storage);
    for n in 0..count {
        partition
            .append(records(&[payload(n, 100)]), AckPolicy::Written)
            .await
            .unwrap();
    }
    storage.close().unwrap();
}

#[tokio::test]
async fn a_flipped_byte_in_a_middle_record_of_a_sealed_segment_refuses_to_open_and_names_file_and_position()
 {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        // 5 records per 600-byte segment; 12 records → 3 segments.
        write_records(dir.path(), mode, 12, 600).await;
        let segment = segment_files(dir.path())[0].clone();
        // Record 2 starts at 2 × 108; flip a payload byte.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&segment)
            .unwrap();
        let mut byte = [0u8; 1];
        file.read_exact_at(&mut byte, 2 * 108 + 50).unwrap();
        file.write_all_at(&[byte[0] ^ 0x01], 2 * 108 + 50).unwrap();
        drop(file);

        let before = storage_support::snapshot(dir.path());
        match open(&config(dir.path(), mode, 600)) {
            Err(StorageError::Corrupt {
                path,
                position,
                reason,
            }) => {
                assert_eq!(path, segment, "{mode:?}");
                assert_eq!(position, 2 * 108, "{mode:?}");
                assert!(reason.contains("CRC"), "{reason}");
            }
            other => panic!("{mode:?}: expected Corrupt, got {other:?}"),
        }
        // Nothing was cut.
        assert_eq!(storage_support::snapshot(dir.path()), before);
    }
}

#[tokio::test]
async fn damage_at_the_end_of_a_segment_that_is_not_the_last_refuses_to_open() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        // 5 records per 600-byte segment; 12 records → 3 segments.
        write_records(dir.path(), mode, 12, 600).await;
        let first = segment_files(dir.path())[0].clone();
        // Flip a byte of the first segment's last record: torn-looking, but committed records
        // follow in the next segment.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&first)
            .unwrap();
        let mut byte = [0u8; 1];
        file.read_exact_at(&mut byte, 4 * 108 + 20).unwrap();
        file.write_all_at(&[byte[0] ^ 0xff], 4 * 108 + 20).unwrap();
        drop(file);
        match open(&config(dir.path(), mode, 600)) {
            Err(StorageError::Corrupt { path, position, .. }) => {
                assert_eq!(path, first, "{mode:?}");
                assert_eq!(position, 4 * 108);
            }
            other => panic!("{mode:?}: expected Corrupt, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_missing_middle_segment_refuses_to_open() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        write_records(dir.path(), mode, 12, 600).await;
        let files = segment_files(dir.path());
        std::fs::remove_file(&files[1]).unwrap();
        match open(&config(dir.path(), mode, 600)) {
            Err(StorageError::Corrupt { path, reason, .. }) => {
                assert_eq!(path, files[2], "{mode:?}");
                assert!(reason.contains("offset 10"), "{reason}");
            }
            other => panic!("{mode:?}: expected Corrupt, got {other:?}"),
        }
    }
}
