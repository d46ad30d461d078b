//! Shared helpers for the `storage_*` integration tests: configs, payloads, and reading a
//! partition back record by record.
#![allow(dead_code)] // each test file uses a different subset

use std::path::{Path, PathBuf};
use std::sync::Arc;

use booblik_broker::storage::test_io::SimIo;
use booblik_broker::storage::{Partition, Storage, StorageConfig, StorageError, WriteMode};
use booblik_protocol::{RecordScanner, RecordSet, TopicName};

/// Both write modes, for tests that must hold in each.
pub const MODES: [WriteMode; 2] = [WriteMode::Mapped, WriteMode::File];

/// The topic every storage test uses.
pub const TOPIC: &str = "events";

/// A config for `dir` with small segments, so tests roll without writing megabytes.
pub fn config(dir: &Path, mode: WriteMode, segment_bytes: u64) -> StorageConfig {
    StorageConfig {
        data_dir: dir.to_path_buf(),
        segment_bytes,
        write_mode: mode,
        ..StorageConfig::default()
    }
}

/// [`config`] with a simulated I/O (`SimIo::new`: the real file system, faults on demand), and
/// that I/O, for tests that inject failures or stall the disk.
pub fn config_with_sim(
    dir: &Path,
    mode: WriteMode,
    segment_bytes: u64,
) -> (StorageConfig, Arc<SimIo>) {
    let sim = Arc::new(SimIo::new());
    let mut config = config(dir, mode, segment_bytes);
    config.io = Arc::clone(&sim) as _;
    (config, sim)
}

/// Opens a storage with one topic of one partition.
pub fn open(config: &StorageConfig) -> Result<Storage, StorageError> {
    Storage::open(config.clone(), &[(topic(), 1)])
}

/// The topic name.
pub fn topic() -> TopicName {
    TopicName::new(TOPIC).unwrap()
}

/// The only partition of [`open`]'s storage.
pub fn partition(storage: &Storage) -> Arc<Partition> {
    Arc::clone(storage.partition(TOPIC, 0).expect("partition 0 exists"))
}

/// The directory of that partition.
pub fn partition_dir(data_dir: &Path) -> PathBuf {
    data_dir.join(format!("{TOPIC}-0"))
}

/// Every file of that partition's directory, by name, with its bytes: what a refused open must
/// leave exactly as it was.
pub fn snapshot(data_dir: &Path) -> Vec<(std::ffi::OsString, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(partition_dir(data_dir))
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            (entry.file_name(), std::fs::read(entry.path()).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// The segment files of that partition, sorted.
pub fn segment_files(data_dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(partition_dir(data_dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    files.sort();
    files
}

/// A deterministic payload for record `n`, `len` bytes long.
pub fn payload(n: u64, len: usize) -> Vec<u8> {
    let mut bytes = format!("record-{n}-").into_bytes();
    bytes.resize(len.max(1), b'.');
    bytes.truncate(len.max(1));
    // Vary the content so a misplaced read cannot match by accident.
    for (i, b) in bytes.iter_mut().enumerate().skip(16) {
        *b = (n as usize).wrapping_mul(31).wrapping_add(i) as u8;
    }
    bytes
}

/// A record set of the given payloads.
pub fn records<P: AsRef<[u8]>>(payloads: &[P]) -> RecordSet {
    RecordSet::from_payloads(payloads.iter().map(AsRef::as_ref)).unwrap()
}

/// The payload of the record at `offset`, read through the public read path (and CRC-checked).
pub fn read_record(partition: &Partition, offset: i64) -> Vec<u8> {
    let slice = partition.read(offset, u32::MAX).unwrap();
    let bytes = slice.to_bytes().unwrap();
    let record = RecordScanner::new(&bytes)
        .next()
        .unwrap_or_else(|| panic!("no whole record at offset {offset}"));
    assert!(record.crc_matches(), "CRC mismatch at offset {offset}");
    record.payload.to_vec()
}

/// Every record from the log start to the high watermark, with its offset, CRC-checked.
pub fn read_all(partition: &Partition) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut offset = partition.log_start_offset();
    let high_watermark = partition.high_watermark();
    while offset < high_watermark {
        let slice = partition.read(offset, u32::MAX).unwrap();
        let bytes = slice.to_bytes().unwrap();
        let before = offset;
        for record in RecordScanner::new(&bytes) {
            assert!(record.crc_matches(), "CRC mismatch at offset {offset}");
            if offset >= high_watermark {
                break;
            }
            out.push((offset, record.payload.to_vec()));
            offset += 1;
        }
        assert!(offset > before, "no progress reading at offset {offset}");
    }
    out
}

// A test that takes both `support` and `storage_support` loads this file twice, once in each.
#[allow(clippy::duplicate_mod)]
#[path = "../idle_support/mod.rs"]
mod idle_support;
pub use idle_support::wait_until_idle;

/// Appends a first WRITTEN batch and waits until the partition is idle again. In MAPPED mode
/// the first batch reserves the segment's first disk blocks (`fallocate`), which is the writer
/// thread's work; the batches after it can be written inline.
pub async fn idle_after_a_first_batch(partition: &Partition) {
    partition
        .append(records(&[b"first"]), booblik_protocol::AckPolicy::Written)
        .await
        .unwrap();
    wait_until_idle(partition).await;
}
