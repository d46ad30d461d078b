//! Fuzz target: the broker's crash recovery on arbitrary segment files.
//!
//! Whatever bytes a crash, a bad disk or a hostile user leaves in a partition directory,
//! `Storage::open` must either recover a log or refuse with `StorageError::Corrupt` — never
//! panic, never hang, never invent records. This target writes one to three segment files built
//! from the input into a fresh directory and opens the storage on it.
//!
//! # Input layout
//!
//! ```text
//! byte 0         control: bits 0-1 segment count - 1 (3 means 1), bit 2 write mode (0 MAPPED,
//!                1 FILE), bit 3 base offsets (0: chained honestly, 1: read from the input),
//!                bits 4-5 segment capacity (16 B, 256 B, 4 KiB, 1 MiB)
//! per segment    [8 bytes: base offset, only with bit 3 set]
//!                2 bytes: segment length n (big-endian; the last segment takes the rest)
//!                n bytes: the segment file's contents
//! ```
//!
//! Honest chaining gives each segment the base offset the previous one ends at, so the fuzzer
//! reaches multi-segment logs that open; raw base offsets exercise the gap checks.
//!
//! # Oracle
//!
//! A small model of the recovery rules (SPEC §3, `broker/src/storage/recovery.rs`), written
//! independently of the broker's scanner, predicts the outcome:
//!
//! * each segment's valid prefix is its records from byte 0 while they are whole and their CRC
//!   matches; after it comes a clean end (end of file), a zero length (followed by zeros only,
//!   or by anything else), a torn write (a cut header, a record running past the end, or a CRC
//!   mismatch with no valid record right after it), damage before a valid record (a CRC
//!   mismatch followed by a valid record), or corruption (a negative length);
//! * the log opens iff no segment is corrupt, only the last may be torn, have damage before a
//!   valid record (a power loss with out-of-order write-back: cut, the tail quarantined) or
//!   anything but zeros after a zero length, and each segment starts where the previous one
//!   ends; then it holds exactly the valid prefixes, in order, starting at the first segment's
//!   base offset;
//! * one exception, the unfinished seal: the segment before the last whose file is exactly the
//!   configured capacity (a MAPPED segment not yet trimmed) may be torn or damaged, or end in
//!   zeros with records missing before the last segment; the log then ends with its valid
//!   prefix, and the last segment is set aside (moved into a quarantine file).
//!
//! Beyond "no panic", the target asserts the outcome matches the model (an unexpected
//! `Corrupt` is a false alarm that would keep a healthy broker down; an unexpected success
//! means damage was silently accepted), that a refused open left every segment file byte for
//! byte as it was, that every record read back has a valid CRC at
//! contiguous offsets, that an append after recovery gets the next offset and reads back, and
//! that the recovered-then-appended log reopens to the same records.

#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use booblik_broker::storage::{Partition, Storage, StorageConfig, StorageError, WriteMode};
use booblik_protocol::{
    AckPolicy, RECORD_HEADER_BYTES, RecordScanner, RecordSet, TopicName, crc32c,
};
use libfuzzer_sys::fuzz_target;

const TOPIC: &str = "fuzz";
/// Segment capacities bits 4-5 of the control byte choose from.
const CAPACITIES: [u64; 4] = [16, 256, 4096, 1024 * 1024];
/// Records appended after a successful recovery. The longer one exactly fills the smallest
/// capacity (8 header bytes + 8).
const APPENDED: [&[u8]; 2] = [b"appended", b"x"];
/// Raw base offsets are kept below this, so appends never approach `i64::MAX` (offsets that
/// large are not a recovery question; see the README).
const MAX_RAW_BASE_OFFSET: u64 = (1 << 62) - 1;

/// One segment file to write.
#[derive(Debug)]
struct SegmentFile {
    base_offset: i64,
    bytes: Vec<u8>,
}

/// How the model says one segment's scan ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// End of file: the segment ends cleanly.
    Clean,
    /// A zero length; `only_zeros` when nothing but zeros follows it (unwritten space). Behind
    /// anything else the last segment is cut and any other segment is corrupt.
    ZeroLength { only_zeros: bool },
    /// A torn last write: cut off on recovery if the segment is the last.
    Torn,
    /// A CRC mismatch followed by a valid record: in the last segment, cut off on recovery (the
    /// tail kept in a quarantine file); anywhere else, corruption.
    DamagedBeforeValid,
    /// Damage recovery must refuse.
    Corrupt,
}

/// The valid prefix of a segment (its records' payloads) and how it ends.
fn model_segment(bytes: &[u8]) -> (Vec<&[u8]>, Stop) {
    let mut records = Vec::new();
    let mut at = 0usize;
    loop {
        let rest = &bytes[at..];
        if rest.is_empty() {
            return (records, Stop::Clean);
        }
        if rest.len() < 4 {
            // Fewer bytes than a length field: all zeros is unwritten space (a pre-sized
            // segment's tail), anything else a cut header.
            if rest.iter().all(|&b| b == 0) {
                return (records, Stop::ZeroLength { only_zeros: true });
            }
            return (records, Stop::Torn);
        }
        let len = i32::from_be_bytes(rest[..4].try_into().unwrap());
        if len == 0 {
            let only_zeros = rest.iter().all(|&b| b == 0);
            return (records, Stop::ZeroLength { only_zeros });
        }
        if len < 0 {
            return (records, Stop::Corrupt);
        }
        let end = RECORD_HEADER_BYTES + len as usize;
        if rest.len() < end {
            return (records, Stop::Torn);
        }
        let payload = &rest[RECORD_HEADER_BYTES..end];
        if crc32c(payload) != u32::from_be_bytes(rest[4..8].try_into().unwrap()) {
            let stop = if valid_record_at(&rest[end..]) {
                Stop::DamagedBeforeValid
            } else {
                Stop::Torn
            };
            return (records, stop);
        }
        records.push(payload);
        at += end;
    }
}

/// True when `bytes` starts with a whole record whose CRC matches.
fn valid_record_at(bytes: &[u8]) -> bool {
    if bytes.len() < RECORD_HEADER_BYTES {
        return false;
    }
    let len = i32::from_be_bytes(bytes[..4].try_into().unwrap());
    if len <= 0 || bytes.len() < RECORD_HEADER_BYTES + len as usize {
        return false;
    }
    let payload = &bytes[RECORD_HEADER_BYTES..RECORD_HEADER_BYTES + len as usize];
    crc32c(payload) == u32::from_be_bytes(bytes[4..8].try_into().unwrap())
}

/// Splits the input into the write mode, the capacity and the segment files.
fn parse_input(data: &[u8]) -> Option<(WriteMode, u64, Vec<SegmentFile>)> {
    let (&control, mut rest) = data.split_first()?;
    let count = match control & 0b11 {
        0 | 3 => 1,
        n => usize::from(n) + 1,
    };
    let mode = if control & 0b100 == 0 {
        WriteMode::Mapped
    } else {
        WriteMode::File
    };
    let raw_bases = control & 0b1000 != 0;
    let capacity = CAPACITIES[usize::from((control >> 4) & 0b11)];
    let mut segments: Vec<SegmentFile> = Vec::with_capacity(count);
    let mut next_base = 0i64;
    for n in 0..count {
        let base_offset = if raw_bases {
            let (raw, tail) = rest.split_first_chunk::<8>()?;
            rest = tail;
            (u64::from_be_bytes(*raw) & MAX_RAW_BASE_OFFSET) as i64
        } else {
            next_base
        };
        let bytes = if n + 1 == count {
            std::mem::take(&mut rest).to_vec()
        } else {
            let (len, tail) = rest.split_first_chunk::<2>()?;
            let len = usize::from(u16::from_be_bytes(*len)).min(tail.len());
            let (bytes, tail) = tail.split_at(len);
            rest = tail;
            bytes.to_vec()
        };
        next_base = base_offset + model_segment(&bytes).0.len() as i64;
        if segments.iter().any(|s| s.base_offset == base_offset) {
            return None; // two files cannot have the same name
        }
        segments.push(SegmentFile { base_offset, bytes });
    }
    Some((mode, capacity, segments))
}

/// The model's verdict: `Some(first offset, records)` if the log must open, `None` if it must
/// be refused as corrupt. `presized_bytes` is the configured segment capacity: the segment
/// before the last at exactly that length may be a MAPPED segment whose seal had not finished,
/// which recovery treats as the end of the log when it is damaged (or ends in zeros with records
/// missing before the last segment), setting the last segment aside.
fn model_log(segments: &[SegmentFile], presized_bytes: u64) -> Option<(i64, Vec<Vec<u8>>)> {
    let mut sorted: Vec<&SegmentFile> = segments.iter().collect();
    sorted.sort_by_key(|s| s.base_offset);
    let mut records = Vec::new();
    let mut expected_base = None;
    for (n, segment) in sorted.iter().enumerate() {
        let is_last = n + 1 == sorted.len();
        let may_be_sealing = n + 2 == sorted.len() && segment.bytes.len() as u64 == presized_bytes;
        if expected_base.is_some_and(|base| base != segment.base_offset) {
            return None;
        }
        let (prefix, stop) = model_segment(&segment.bytes);
        let end = segment.base_offset + prefix.len() as i64;
        let ends_the_log = match stop {
            // A zero tail and records missing before the last segment: an unfinished seal
            // that lost its last pages, if the file is still pre-sized. (A last segment that
            // starts inside these records is corruption: the continuity check refuses it.)
            Stop::ZeroLength { only_zeros: true } => {
                may_be_sealing && sorted[n + 1].base_offset > end
            }
            Stop::Clean => false,
            Stop::Torn | Stop::DamagedBeforeValid | Stop::ZeroLength { only_zeros: false }
                if is_last || may_be_sealing =>
            {
                may_be_sealing
            }
            Stop::Torn
            | Stop::DamagedBeforeValid
            | Stop::ZeroLength { only_zeros: false }
            | Stop::Corrupt => return None,
        };
        expected_base = Some(end);
        records.extend(prefix.into_iter().map(<[u8]>::to_vec));
        if ends_the_log {
            break;
        }
    }
    Some((sorted.first().map_or(0, |s| s.base_offset), records))
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a tokio runtime")
    })
}

/// A scratch directory on tmpfs when there is one: recovery fsyncs, and fsync on a real disk
/// would cut the executions per second a hundredfold.
fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    let builder = tempfile::Builder::new()
        .prefix("segment-recovery-")
        .to_owned();
    if shm.is_dir() {
        builder.tempdir_in(shm)
    } else {
        builder.tempdir()
    }
    .expect("a scratch directory")
}

fn open(config: &StorageConfig) -> Result<Storage, StorageError> {
    Storage::open(config.clone(), &[(TopicName::new(TOPIC).unwrap(), 1)])
}

/// Every record from the log start to the high watermark, CRC-checked, at contiguous offsets.
fn read_all(partition: &Partition) -> (i64, Vec<Vec<u8>>) {
    let start = partition.log_start_offset();
    let end = partition.high_watermark();
    assert!(
        start <= end,
        "log start {start} is past the high watermark {end}"
    );
    let mut records = Vec::new();
    let mut offset = start;
    while offset < end {
        let bytes = partition
            .read(offset, u32::MAX)
            .expect("every offset below the high watermark is readable")
            .to_bytes()
            .expect("a readable segment");
        let before = records.len();
        for record in RecordScanner::new(&bytes) {
            assert!(
                record.crc_matches(),
                "a recovered record fails its CRC at offset {offset}"
            );
            records.push(record.payload.to_vec());
        }
        let got = records.len() - before;
        assert!(
            got > 0,
            "no whole record at offset {offset} below the high watermark {end}"
        );
        offset += got as i64;
    }
    assert_eq!(offset, end, "records run past the high watermark");
    (start, records)
}

fuzz_target!(|data: &[u8]| {
    let Some((mode, capacity, segments)) = parse_input(data) else {
        return;
    };
    let dir = scratch_dir();
    let partition_dir = dir.path().join(format!("{TOPIC}-0"));
    std::fs::create_dir(&partition_dir).unwrap();
    for segment in &segments {
        let name = format!("{:020}.log", segment.base_offset);
        std::fs::write(partition_dir.join(name), &segment.bytes).unwrap();
    }
    let config = StorageConfig {
        data_dir: dir.path().to_path_buf(),
        segment_bytes: capacity,
        write_mode: mode,
        ..StorageConfig::default()
    };
    let expected = model_log(&segments, capacity);

    let storage = match (open(&config), &expected) {
        (Ok(storage), Some(_)) => storage,
        (Err(StorageError::Corrupt { .. }), None) => {
            // Refused: nothing may have been cut first.
            for segment in &segments {
                let name = format!("{:020}.log", segment.base_offset);
                let now = std::fs::read(partition_dir.join(&name)).unwrap();
                assert!(now == segment.bytes, "a refused open changed {name}");
            }
            return;
        }
        (Ok(_), None) => panic!("damaged segments were accepted: {segments:?}"),
        (Err(error), _) => panic!("unexpected outcome {error:?} for {segments:?}"),
    };
    let (expected_start, expected_records) = expected.unwrap();
    let partition = std::sync::Arc::clone(storage.partition(TOPIC, 0).unwrap());
    let (start, records) = read_all(&partition);
    assert_eq!(
        start, expected_start,
        "the log starts at the first segment's base offset"
    );
    assert_eq!(
        records, expected_records,
        "recovery kept exactly the valid prefixes"
    );

    // The recovered log takes appends at the next offset (rolling if the segment is full).
    let high_watermark = partition.high_watermark();
    let batch = RecordSet::from_payloads(APPENDED).unwrap();
    let appended = runtime()
        .block_on(partition.append(batch, AckPolicy::Forced))
        .expect("an append after recovery succeeds")
        .expect("FORCED is acknowledged");
    assert_eq!(appended.base_offset, high_watermark);
    assert_eq!(
        partition.high_watermark(),
        high_watermark + APPENDED.len() as i64
    );
    let mut with_appended = expected_records;
    with_appended.extend(APPENDED.iter().map(|p| p.to_vec()));
    assert_eq!(read_all(&partition).1, with_appended);
    drop(partition);
    storage.close().expect("a clean close");
    drop(storage);

    // What recovery left, plus the appends, is itself a clean log.
    let reopened = open(&config).expect("a recovered log reopens");
    let partition = reopened.partition(TOPIC, 0).unwrap();
    assert_eq!(read_all(partition), (expected_start, with_appended));
    reopened.close().expect("a clean close");
});
