//! Offsets are `int64`, and so is the high watermark after the last record, so a log can never
//! hold a record at `i64::MAX`. A segment file whose offsets would pass it (a hand-made or
//! damaged name) is refused on open as corruption, naming the file; an append whose last record
//! would pass it is refused whole. Neither panics, and the refused append leaves the partition
//! as it was: not poisoned, readable, appendable up to the last offset, and reopenable.

mod storage_support;

use booblik_broker::storage::{Storage, StorageError};
use booblik_protocol::{AckPolicy, encode_record};
use storage_support::{MODES, config, open, partition, partition_dir, read_all, records};

/// Small segments: nothing here needs room.
const SEGMENT_BYTES: u64 = 64 * 1024;

/// Writes a segment file named `name` holding `payloads`, in a fresh data directory.
fn data_dir_with_segment(name: &str, payloads: &[&[u8]]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let partition_dir = partition_dir(dir.path());
    std::fs::create_dir_all(&partition_dir).unwrap();
    let mut bytes = Vec::new();
    for payload in payloads {
        encode_record(payload, &mut bytes);
    }
    std::fs::write(partition_dir.join(name), bytes).unwrap();
    dir
}

fn assert_refused_as_overflow(opened: Result<Storage, StorageError>, name: &str) {
    match opened {
        Err(StorageError::Corrupt { path, reason, .. }) => {
            assert_eq!(path.file_name().unwrap(), name);
            assert!(
                reason.starts_with("offsets overflow"),
                "unexpected reason: {reason}"
            );
        }
        other => panic!("{name} was not refused as an offset overflow: {other:?}"),
    }
}

#[test]
fn segments_whose_offsets_pass_the_maximum_are_refused_on_open() {
    for mode in MODES {
        // One record at i64::MAX would put the high watermark past it.
        let name = format!("{:020}.log", i64::MAX);
        let dir = data_dir_with_segment(&name, &[b"last"]);
        assert_refused_as_overflow(open(&config(dir.path(), mode, SEGMENT_BYTES)), &name);

        // Twenty digits above i64::MAX name no offset at all.
        for name in ["09223372036854775808.log", "99999999999999999999.log"] {
            let dir = data_dir_with_segment(name, &[b"beyond"]);
            assert_refused_as_overflow(open(&config(dir.path(), mode, SEGMENT_BYTES)), name);
        }
    }
}

#[tokio::test]
async fn an_append_past_the_maximum_is_refused_whole_and_the_partition_stays_usable() {
    for mode in MODES {
        let base = i64::MAX - 3;
        let dir = data_dir_with_segment(&format!("{base:020}.log"), &[b"first"]);
        let config = config(dir.path(), mode, SEGMENT_BYTES);
        let storage = open(&config).unwrap();
        let partition = partition(&storage);
        assert_eq!(partition.high_watermark(), i64::MAX - 2);

        for ack in [AckPolicy::Written, AckPolicy::Forced] {
            match partition.append(records(&[b"a", b"b", b"c"]), ack).await {
                Err(StorageError::OffsetOverflow {
                    high_watermark,
                    records,
                }) => {
                    assert_eq!(high_watermark, i64::MAX - 2);
                    assert_eq!(records, 3);
                }
                other => panic!("{mode} {ack:?}: an append past i64::MAX got {other:?}"),
            }
        }
        // ack NONE has no answer to refuse with; it must still not poison or kill the writer.
        assert!(
            partition
                .append(records(&[b"a", b"b", b"c"]), AckPolicy::None)
                .await
                .unwrap()
                .is_none()
        );
        let stats = partition.stats();
        assert!(!stats.poisoned);
        assert_eq!(
            stats.high_watermark,
            i64::MAX - 2,
            "nothing of a refused batch is kept"
        );

        // The last two offsets are still there to take.
        let appended = partition
            .append(records(&[&b"second"[..], b"third"]), AckPolicy::Forced)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(appended.base_offset, i64::MAX - 2);
        assert_eq!(appended.log_end_offset, i64::MAX);
        assert!(matches!(
            partition
                .append(records(&[b"no room"]), AckPolicy::Written)
                .await,
            Err(StorageError::OffsetOverflow { .. })
        ));
        let expected = vec![
            (base, b"first".to_vec()),
            (base + 1, b"second".to_vec()),
            (base + 2, b"third".to_vec()),
        ];
        assert_eq!(read_all(&partition), expected);
        drop(partition);
        storage.close().unwrap();

        // A log that ends at the largest offset reopens as it was.
        let storage = open(&config).unwrap();
        let reopened = storage_support::partition(&storage);
        assert_eq!(reopened.high_watermark(), i64::MAX);
        assert_eq!(read_all(&reopened), expected);
        drop(reopened);
        storage.close().unwrap();
    }
}
