//! A record that does not fit the active segment is never truncated into it or written over
//! anything: the partition seals the segment and rolls to a new one named by the next offset.

mod storage_support;

use booblik_protocol::AckPolicy;
use storage_support::{
    MODES, config, open, partition, payload, read_record, records, segment_files,
};

#[tokio::test]
async fn a_1024_byte_segment_takes_four_200_byte_records_and_the_fifth_starts_a_new_segment() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let storage = open(&config(dir.path(), mode, 1024)).unwrap();
        let partition = partition(&storage);
        let written: Vec<Vec<u8>> = (0..5).map(|n| payload(n, 200)).collect();
        for (n, record) in written.iter().enumerate().take(4) {
            let appended = partition
                .append(records(&[record]), AckPolicy::Written)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(appended.base_offset, n as i64);
        }
        // 4 × 208 = 832 bytes; a fifth would need 1040 > 1024.
        assert_eq!(partition.stats().segments, 1, "{mode:?}");
        partition
            .append(records(&[&written[4]]), AckPolicy::Written)
            .await
            .unwrap();
        assert_eq!(partition.stats().segments, 2, "{mode:?}");

        // The first segment holds exactly the four records, untouched.
        let first = partition.read(0, u32::MAX).unwrap();
        assert_eq!(first.segment_base_offset(), 0);
        assert_eq!(first.len(), 4 * 208, "{mode:?}");
        let fifth = partition.read(4, u32::MAX).unwrap();
        assert_eq!(fifth.segment_base_offset(), 4, "{mode:?}");
        assert_eq!(fifth.position(), 0);
        for (n, record) in written.iter().enumerate() {
            assert_eq!(&read_record(&partition, n as i64), record, "{mode:?}");
        }
        storage.close().unwrap();
        let names: Vec<String> = segment_files(dir.path())
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            ["00000000000000000000.log", "00000000000000000004.log"],
            "{mode:?}"
        );
        // A sealed segment is trimmed to its records in both modes.
        assert_eq!(
            std::fs::metadata(&segment_files(dir.path())[0])
                .unwrap()
                .len(),
            832
        );
    }
}

#[tokio::test]
async fn a_read_never_crosses_a_segment_boundary() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let storage = open(&config(dir.path(), mode, 1024)).unwrap();
        let partition = partition(&storage);
        let batch: Vec<Vec<u8>> = (0..10).map(|n| payload(n, 200)).collect();
        partition
            .append(records(&batch), AckPolicy::Written)
            .await
            .unwrap();
        // From offset 2 the first segment has two records left (416 bytes), however much is asked.
        let slice = partition.read(2, 1_000_000).unwrap();
        assert_eq!(slice.len(), 2 * 208, "{mode:?}");
        // maxBytes cuts on a byte boundary, even mid-record.
        let cut = partition.read(2, 300).unwrap();
        assert_eq!(cut.len(), 300, "{mode:?}");
        storage.close().unwrap();
    }
}
