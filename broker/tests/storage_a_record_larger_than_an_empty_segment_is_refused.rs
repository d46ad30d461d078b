//! A record with `size + 8 > segment capacity` can never fit: it is refused (RECORD_TOO_LARGE),
//! never truncated, and the batch holding it is refused whole.

mod storage_support;

use booblik_broker::storage::StorageError;
use booblik_protocol::AckPolicy;
use storage_support::{MODES, config, open, partition, read_record, records};

#[tokio::test]
async fn a_record_one_byte_too_large_for_an_empty_segment_is_refused_and_nothing_is_written() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let storage = open(&config(dir.path(), mode, 1024)).unwrap();
        let partition = partition(&storage);
        assert_eq!(partition.max_record_bytes(), 1016);

        let too_large = vec![b'x'; 1017];
        for ack in [AckPolicy::None, AckPolicy::Written, AckPolicy::Forced] {
            match partition.append(records(&[&too_large]), ack).await {
                Err(StorageError::RecordTooLarge {
                    size: 1017,
                    max: 1016,
                }) => {}
                other => panic!("{mode:?} {ack:?}: expected RecordTooLarge, got {other:?}"),
            }
        }
        // A batch with one such record among small ones is refused whole.
        let refused = partition
            .append(
                records(&[b"small".as_slice(), &too_large]),
                AckPolicy::Written,
            )
            .await;
        assert!(matches!(refused, Err(StorageError::RecordTooLarge { .. })));
        assert_eq!(partition.high_watermark(), 0, "{mode:?}");

        // The largest record that fits is accepted whole.
        let largest = vec![b'y'; 1016];
        let appended = partition
            .append(records(&[&largest]), AckPolicy::Written)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(appended.base_offset, 0);
        assert_eq!(read_record(&partition, 0), largest, "{mode:?}");
        assert!(!partition.stats().poisoned);
        storage.close().unwrap();
    }
}
