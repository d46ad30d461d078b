//! Offsets are gap-free and monotonic: the n-th accepted record of a batch at base B gets B+n.

mod storage_support;

use booblik_protocol::AckPolicy;
use storage_support::{MODES, config, open, partition, payload, records};

#[tokio::test]
async fn a_hundred_appends_get_offsets_zero_to_ninety_nine_in_each_write_mode() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let storage = open(&config(dir.path(), mode, 1024 * 1024)).unwrap();
        let partition = partition(&storage);
        for n in 0..100 {
            let appended = partition
                .append(records(&[payload(n, 20)]), AckPolicy::Written)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(appended.base_offset, n as i64, "{mode:?}");
            assert_eq!(appended.log_end_offset, n as i64 + 1, "{mode:?}");
        }
        assert_eq!(partition.high_watermark(), 100, "{mode:?}");
        assert_eq!(partition.log_start_offset(), 0, "{mode:?}");
        storage.close().unwrap();
    }
}

#[tokio::test]
async fn a_batch_gets_one_answer_and_consecutive_offsets_in_each_write_mode() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let storage = open(&config(dir.path(), mode, 1024 * 1024)).unwrap();
        let partition = partition(&storage);
        let first: Vec<_> = (0..7).map(|n| payload(n, 10)).collect();
        partition
            .append(records(&first), AckPolicy::Written)
            .await
            .unwrap();
        let batch: Vec<_> = (7..12).map(|n| payload(n, 30)).collect();
        let appended = partition
            .append(records(&batch), AckPolicy::Written)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(appended.base_offset, 7, "{mode:?}");
        assert_eq!(appended.log_end_offset, 12, "{mode:?}");
        for (n, expected) in batch.iter().enumerate() {
            assert_eq!(
                &storage_support::read_record(&partition, 7 + n as i64),
                expected,
                "{mode:?}"
            );
        }
        storage.close().unwrap();
    }
}

#[tokio::test]
async fn a_batch_that_spans_a_roll_keeps_consecutive_offsets() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        // 100-byte records take 108 bytes: 9 fit a 1000-byte segment.
        let storage = open(&config(dir.path(), mode, 1000)).unwrap();
        let partition = partition(&storage);
        let batch: Vec<_> = (0..25).map(|n| payload(n, 100)).collect();
        let appended = partition
            .append(records(&batch), AckPolicy::Written)
            .await
            .unwrap()
            .unwrap();
        assert_eq!((appended.base_offset, appended.log_end_offset), (0, 25));
        assert_eq!(partition.stats().segments, 3, "{mode:?}");
        let all = storage_support::read_all(&partition);
        let offsets: Vec<i64> = all.iter().map(|(o, _)| *o).collect();
        assert_eq!(offsets, (0..25).collect::<Vec<_>>(), "{mode:?}");
        for ((_, got), expected) in all.iter().zip(&batch) {
            assert_eq!(got, expected, "{mode:?}");
        }
        storage.close().unwrap();
    }
}
