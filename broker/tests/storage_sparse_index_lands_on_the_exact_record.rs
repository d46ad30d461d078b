//! The sparse index keeps one entry per ~4096 bytes, yet a lookup lands exactly on the record:
//! binary search to the nearest entry, then a forward scan over length prefixes.

mod storage_support;

use booblik_protocol::AckPolicy;
use storage_support::{MODES, config, open, partition, payload, read_record, records};

#[tokio::test]
async fn record_4321_of_5000_records_of_64_bytes_is_found_at_its_exact_position() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let storage = open(&config(dir.path(), mode, 1024 * 1024)).unwrap();
        let partition = partition(&storage);
        let written: Vec<Vec<u8>> = (0..5000).map(|n| payload(n, 64)).collect();
        for chunk in written.chunks(100) {
            partition
                .append(records(chunk), AckPolicy::Written)
                .await
                .unwrap();
        }
        let stats = partition.stats();
        assert_eq!(stats.segments, 1, "{mode:?}");
        // 5000 × 72 bytes = 360 000 bytes: far more than one interval, far fewer than one
        // entry per record, so the lookup must scan forward from an entry.
        assert!(
            stats.index_entries > 50 && stats.index_entries < 100,
            "{stats:?}"
        );

        let slice = partition.read(4321, 72).unwrap();
        assert_eq!(slice.position(), 4321 * (8 + 64), "{mode:?}");
        assert_eq!(slice.len(), 72);
        assert_eq!(read_record(&partition, 4999), written[4999], "{mode:?}");
        assert_eq!(read_record(&partition, 4321), written[4321], "{mode:?}");
        storage.close().unwrap();
    }
}

#[tokio::test]
async fn reopening_rebuilds_the_index_so_lookups_still_land_exactly() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let config = config(dir.path(), mode, 1024 * 1024);
        let written: Vec<Vec<u8>> = (0..5000).map(|n| payload(n, 64)).collect();
        {
            let storage = open(&config).unwrap();
            let partition = partition(&storage);
            for chunk in written.chunks(500) {
                partition
                    .append(records(chunk), AckPolicy::Written)
                    .await
                    .unwrap();
            }
            storage.close().unwrap();
        }
        let storage = open(&config).unwrap();
        let partition = partition(&storage);
        assert!(partition.stats().index_entries > 50, "{mode:?}");
        assert_eq!(partition.read(4321, 1).unwrap().position(), 4321 * 72);
        assert_eq!(read_record(&partition, 4999), written[4999], "{mode:?}");
        storage.close().unwrap();
    }
}
