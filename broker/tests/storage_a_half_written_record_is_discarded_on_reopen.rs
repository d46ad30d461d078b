//! A torn last record does not come back from the dead: recovery discards it, the high
//! watermark points at the last whole record, and the next append reuses that offset. The two
//! write modes tear differently, so each has its own test.

mod storage_support;

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::FileExt;

use booblik_broker::storage::WriteMode;
use booblik_protocol::{AckPolicy, crc32c};
use storage_support::{
    config, open, partition, payload, read_all, read_record, records, segment_files,
};

const SEGMENT_BYTES: u64 = 64 * 1024;

/// Writes three records with a clean close; returns the byte length of the log.
async fn three_records(dir: &std::path::Path, mode: WriteMode) -> u64 {
    let storage = open(&config(dir, mode, SEGMENT_BYTES)).unwrap();
    let partition = partition(&storage);
    for n in 0..3 {
        partition
            .append(records(&[payload(n, 100)]), AckPolicy::Written)
            .await
            .unwrap();
    }
    storage.close().unwrap();
    3 * 108
}

async fn reopen_and_expect_three_then_reuse_offset_3(dir: &std::path::Path, mode: WriteMode) {
    let storage = open(&config(dir, mode, SEGMENT_BYTES)).unwrap();
    let partition = partition(&storage);
    assert_eq!(partition.high_watermark(), 3, "{mode:?}");
    let log = read_all(&partition);
    assert_eq!(log.len(), 3);
    let appended = partition
        .append(records(&[b"replacement"]), AckPolicy::Written)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        appended.base_offset, 3,
        "{mode:?}: the discarded offset is reused"
    );
    assert_eq!(read_record(&partition, 3), b"replacement");
    // Exactly the new record follows: nothing of the torn one survived behind it.
    let tail = partition.read(3, u32::MAX).unwrap();
    assert_eq!(tail.len() as usize, 8 + b"replacement".len(), "{mode:?}");
    storage.close().unwrap();
    // And it stays that way after another restart.
    let storage = open(&config(dir, mode, SEGMENT_BYTES)).unwrap();
    let reopened = storage_support::partition(&storage);
    assert_eq!(reopened.high_watermark(), 4, "{mode:?}");
    assert_eq!(read_record(&reopened, 3), b"replacement");
    storage.close().unwrap();
}

#[tokio::test]
async fn a_half_written_record_in_file_mode_is_cut_off_and_its_offset_reused() {
    let dir = tempfile::tempdir().unwrap();
    let end = three_records(dir.path(), WriteMode::File).await;
    let segment = &segment_files(dir.path())[0];
    // A FILE-mode crash mid-pwrite: the header promises 100 bytes, only 40 arrived.
    let mut torn = Vec::new();
    torn.extend_from_slice(&100i32.to_be_bytes());
    torn.extend_from_slice(&crc32c(&payload(3, 100)).to_be_bytes());
    torn.extend_from_slice(&payload(3, 100)[..40]);
    OpenOptions::new()
        .append(true)
        .open(segment)
        .unwrap()
        .write_all(&torn)
        .unwrap();
    reopen_and_expect_three_then_reuse_offset_3(dir.path(), WriteMode::File).await;
    assert_eq!(std::fs::metadata(segment).unwrap().len(), end + 8 + 11);
}

#[tokio::test]
async fn a_half_written_record_in_mapped_mode_leaves_a_zero_length_and_is_cleared() {
    let dir = tempfile::tempdir().unwrap();
    let end = three_records(dir.path(), WriteMode::Mapped).await;
    let segment = &segment_files(dir.path())[0];
    // A MAPPED-mode crash: the file is pre-sized, the body and CRC of the fourth record are in
    // place, but its length (written last) is still zero.
    let file = OpenOptions::new().write(true).open(segment).unwrap();
    file.set_len(SEGMENT_BYTES).unwrap();
    let body = payload(3, 100);
    file.write_all_at(&crc32c(&body).to_be_bytes(), end + 4)
        .unwrap();
    file.write_all_at(&body, end + 8).unwrap();
    drop(file);
    reopen_and_expect_three_then_reuse_offset_3(dir.path(), WriteMode::Mapped).await;
}

#[tokio::test]
async fn a_last_record_with_a_crc_mismatch_is_discarded_in_each_mode() {
    for mode in [WriteMode::Mapped, WriteMode::File] {
        let dir = tempfile::tempdir().unwrap();
        let end = three_records(dir.path(), mode).await;
        let segment = &segment_files(dir.path())[0];
        // Length and CRC of a fourth record landed, its body did not (a power loss can persist
        // pages out of order).
        let file = OpenOptions::new().write(true).open(segment).unwrap();
        file.write_all_at(&100i32.to_be_bytes(), end).unwrap();
        file.write_all_at(&crc32c(&payload(3, 100)).to_be_bytes(), end + 4)
            .unwrap();
        file.write_all_at(&[0u8; 100], end + 8).unwrap();
        drop(file);
        reopen_and_expect_three_then_reuse_offset_3(dir.path(), mode).await;
    }
}
