//! A record length that reads zero in a sealed segment (bit rot, a lost page) is not the clean
//! end of that segment: the next segment's base offset says more records belong there, so the
//! acknowledged records behind the zero are damaged, not absent. Opening refuses with `Corrupt`
//! naming the sealed file and the byte of the zero length — and leaves every file exactly as it
//! was, so an operator can still restore or inspect them.

mod storage_support;

use std::os::unix::fs::FileExt;

use booblik_broker::storage::{StorageError, WriteMode};
use booblik_protocol::AckPolicy;
use storage_support::{MODES, config, open, partition, payload, records, segment_files, snapshot};

/// 100-byte payloads: 108 bytes per record on disk.
const RECORD_BYTES: u64 = 108;
/// Five records per segment; twelve records make three segments.
const SEGMENT_BYTES: u64 = 600;
const RECORDS: u64 = 12;

async fn write_three_segments(dir: &std::path::Path, mode: WriteMode) {
    let storage = open(&config(dir, mode, SEGMENT_BYTES)).unwrap();
    let partition = partition(&storage);
    for n in 0..RECORDS {
        partition
            .append(records(&[payload(n, 100)]), AckPolicy::Written)
            .await
            .unwrap();
    }
    storage.close().unwrap();
}

fn zero_length_field(path: &std::path::Path, position: u64) {
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.write_all_at(&[0; 4], position).unwrap();
}

/// Zeroes the length field of record `record` of segment `segment` (in every write mode), opens
/// the partition, and checks that the open was refused as `Corrupt` at that place and that no
/// file of the partition changed.
async fn zeroing_a_length_refuses_to_open_and_changes_nothing(segment: usize, record: u64) {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        write_three_segments(dir.path(), mode).await;
        let damaged = segment_files(dir.path())[segment].clone();
        zero_length_field(&damaged, record * RECORD_BYTES);
        let before = snapshot(dir.path());

        let opened = open(&config(dir.path(), mode, SEGMENT_BYTES));
        assert!(
            snapshot(dir.path()) == before,
            "{mode:?}: opening changed the files ({opened:?})"
        );
        match opened {
            Err(StorageError::Corrupt {
                path,
                position,
                reason,
            }) => {
                assert_eq!(path, damaged, "{mode:?}");
                assert_eq!(position, record * RECORD_BYTES, "{mode:?}");
                assert!(reason.contains("zero record length"), "{mode:?}: {reason}");
            }
            other => panic!("{mode:?}: expected Corrupt, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_zeroed_length_in_the_middle_of_a_sealed_segment_refuses_to_open_and_changes_nothing() {
    // Record 2 of the first segment; records 2..5 are still on disk behind it.
    zeroing_a_length_refuses_to_open_and_changes_nothing(0, 2).await;
}

#[tokio::test]
async fn a_zeroed_length_of_the_last_record_of_a_sealed_segment_refuses_to_open_and_changes_nothing()
 {
    // The last record of the middle segment: nothing follows it in the file, yet the third
    // segment's name says the middle one holds five records.
    zeroing_a_length_refuses_to_open_and_changes_nothing(1, 4).await;
}
