//! Damage before a valid record in the last segment — what a power loss leaves when unsynced
//! pages were written back out of order — opens the log: it is cut at the damaged record, and
//! the cut bytes are kept in a quarantine file next to the segment, not deleted.

mod storage_support;

use std::os::unix::fs::FileExt;

use booblik_broker::storage::RecoveredEnd;
use booblik_protocol::AckPolicy;
use storage_support::{
    MODES, config, open, partition, partition_dir, payload, read_all, records, segment_files,
};

#[tokio::test]
async fn a_flipped_byte_in_a_middle_record_of_the_last_segment_is_cut_and_the_tail_quarantined() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let config = config(dir.path(), mode, 1 << 20);
        {
            let storage = open(&config).unwrap();
            let partition = partition(&storage);
            for n in 0..10 {
                partition
                    .append(records(&[payload(n, 100)]), AckPolicy::Written)
                    .await
                    .unwrap();
            }
            storage.close().unwrap();
        }
        let segment = segment_files(dir.path())[0].clone();
        // Record 4 starts at 4 × 108 (8 header bytes + 100); flip a payload byte.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&segment)
            .unwrap();
        let mut byte = [0u8; 1];
        file.read_exact_at(&mut byte, 4 * 108 + 50).unwrap();
        file.write_all_at(&[byte[0] ^ 0x01], 4 * 108 + 50).unwrap();
        let mut tail = vec![0u8; 6 * 108];
        file.read_exact_at(&mut tail, 4 * 108).unwrap();
        drop(file);

        let storage = open(&config).unwrap();
        let partition = partition(&storage);
        assert_eq!(partition.high_watermark(), 4, "{mode:?}");
        assert_eq!(
            partition.stats().recovered_end,
            RecoveredEnd::Quarantined {
                quarantined_bytes: 6 * 108
            },
            "{mode:?}"
        );
        let quarantine = partition_dir(dir.path()).join(format!(
            "000001-{}-at-{}.quarantine",
            segment.file_name().unwrap().to_str().unwrap(),
            4 * 108
        ));
        assert_eq!(std::fs::read(&quarantine).unwrap(), tail, "{mode:?}");
        // The log goes on at the damaged record's offset, and reopens as it is.
        let next = partition
            .append(records(&[b"next"]), AckPolicy::Forced)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(next.base_offset, 4);
        let log = read_all(&partition);
        drop(partition);
        storage.close().unwrap();
        drop(storage);
        let storage = open(&config).unwrap();
        let partition = storage_support::partition(&storage);
        assert_eq!(read_all(&partition), log);
        let end = partition.stats().recovered_end;
        assert!(
            matches!(
                end,
                RecoveredEnd::Clean
                    | RecoveredEnd::ZeroLength {
                        nonzero_after: false
                    }
            ),
            "{mode:?}: {end:?}"
        );
        assert!(
            quarantine.exists(),
            "a later open keeps the quarantine file"
        );
        storage.close().unwrap();
    }
}
