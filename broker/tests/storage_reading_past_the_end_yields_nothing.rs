//! Reading past the end returns "no data", never garbage from the pre-sized tail of a MAPPED
//! segment: at the high watermark an empty slice, beyond it OFFSET_OUT_OF_RANGE.

mod storage_support;

use booblik_broker::storage::StorageError;
use booblik_protocol::AckPolicy;
use storage_support::{MODES, config, open, partition, records};

#[tokio::test]
async fn a_segment_with_one_record_yields_nothing_at_offset_1_and_an_error_at_offset_7() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let storage = open(&config(dir.path(), mode, 1024 * 1024)).unwrap();
        let partition = partition(&storage);
        partition
            .append(records(&[b"only"]), AckPolicy::Written)
            .await
            .unwrap();

        let at_end = partition.read(1, 4096).unwrap();
        assert!(at_end.is_empty(), "{mode:?}");
        assert_eq!(at_end.len(), 0);
        assert_eq!(at_end.high_watermark(), 1);
        assert!(at_end.to_bytes().unwrap().is_empty());

        match partition.read(7, 4096) {
            Err(StorageError::OffsetOutOfRange {
                offset: 7,
                log_start_offset: 0,
                high_watermark: 1,
            }) => {}
            other => panic!("{mode:?}: expected OffsetOutOfRange, got {other:?}"),
        }
        assert!(matches!(
            partition.read(-1, 4096),
            Err(StorageError::OffsetOutOfRange { .. })
        ));
        storage.close().unwrap();
    }
}

#[tokio::test]
async fn a_read_from_the_last_record_stops_at_its_end_not_at_the_segment_capacity() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let storage = open(&config(dir.path(), mode, 1024 * 1024)).unwrap();
        let partition = partition(&storage);
        partition
            .append(
                records(&[b"first".as_slice(), b"second"]),
                AckPolicy::Written,
            )
            .await
            .unwrap();
        let slice = partition.read(1, u32::MAX).unwrap();
        assert_eq!(slice.len() as usize, 8 + b"second".len(), "{mode:?}");
        let mut expected = Vec::new();
        booblik_protocol::encode_record(b"second", &mut expected);
        assert_eq!(&slice.to_bytes().unwrap()[..], &expected[..], "{mode:?}");
        storage.close().unwrap();
    }
}

#[tokio::test]
async fn an_empty_log_reads_empty_at_offset_zero() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let storage = open(&config(dir.path(), mode, 1024 * 1024)).unwrap();
        let partition = partition(&storage);
        assert!(partition.read(0, 4096).unwrap().is_empty(), "{mode:?}");
        assert!(partition.read(1, 4096).is_err(), "{mode:?}");
        storage.close().unwrap();
    }
}
