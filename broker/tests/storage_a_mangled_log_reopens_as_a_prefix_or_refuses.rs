//! Whatever happens to the bytes of a closed log of several segments — cut at any point, bytes
//! flipped anywhere, a record length zeroed, an unclean MAPPED tail, sealed segments a crash left
//! untrimmed — reopening either yields a prefix of the records written, each intact, or refuses
//! with `Corrupt` and leaves every file of the partition byte for byte as it was. It never
//! panics, never returns an altered record, and never cuts anything it then refuses. When it
//! cut damage before a valid record in the last segment, the cut bytes are in a quarantine file;
//! when damage in an untrimmed segment before the last made recovery end the log there (what an
//! unfinished seal leaves), the last segment is in a quarantine file, whole.

mod storage_support;

use std::os::unix::fs::FileExt;

use booblik_broker::storage::{RecoveredEnd, StorageError, WriteMode};
use booblik_protocol::{AckPolicy, RECORD_HEADER_BYTES};
use proptest::prelude::*;
use storage_support::{
    config, open, partition, payload, read_all, records, segment_files, snapshot,
};

/// Small enough that most generated logs span several segments, so damage lands in sealed
/// segments as often as in the last one.
const SEGMENT_BYTES: u64 = 1024;
/// Bytes of a record's length field.
const LENGTH_FIELD_BYTES: usize = 4;

/// One thing done to the files: which segment (as a fraction of the segment count), and what.
#[derive(Debug, Clone)]
enum Mangle {
    /// Truncate the segment at `at` (a fraction of its length).
    Truncate { segment: f64, at: f64 },
    /// XOR the byte at `at` (a fraction of the length) with `mask` (never 0).
    Flip { segment: f64, at: f64, mask: u8 },
    /// Zero the length field of one record of the segment (`record`: a fraction of its count).
    /// A random flip almost never produces a zero length; bit rot or a lost page can.
    ZeroLength { segment: f64, record: f64 },
}

fn mangle() -> impl Strategy<Value = Mangle> {
    prop_oneof![
        (0.0..1.0f64, 0.0..1.0f64).prop_map(|(segment, at)| Mangle::Truncate { segment, at }),
        (0.0..1.0f64, 0.0..1.0f64, 1..=255u8).prop_map(|(segment, at, mask)| Mangle::Flip {
            segment,
            at,
            mask
        }),
        (0.0..1.0f64, 0.0..1.0f64)
            .prop_map(|(segment, record)| Mangle::ZeroLength { segment, record }),
    ]
}

/// Byte positions of the records of a segment file, walking its length fields from byte 0 up
/// to the first one that is not positive or runs past the end.
fn record_positions(bytes: &[u8]) -> Vec<usize> {
    let mut positions = Vec::new();
    let mut at = 0;
    while let Some(field) = bytes.get(at..at + LENGTH_FIELD_BYTES) {
        let len = i32::from_be_bytes(field.try_into().unwrap());
        let Ok(len) = usize::try_from(len) else { break };
        let end = at + RECORD_HEADER_BYTES + len;
        if len == 0 || end > bytes.len() {
            break;
        }
        positions.push(at);
        at = end;
    }
    positions
}

fn apply(data_dir: &std::path::Path, mangle: &Mangle) {
    let files = segment_files(data_dir);
    let pick =
        |fraction: f64| &files[((fraction * files.len() as f64) as usize).min(files.len() - 1)];
    match *mangle {
        Mangle::Truncate { segment, at } => {
            let path = pick(segment);
            let len = std::fs::metadata(path).unwrap().len();
            let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
            file.set_len((at * len as f64) as u64).unwrap();
        }
        Mangle::Flip { segment, at, mask } => {
            let path = pick(segment);
            let len = std::fs::metadata(path).unwrap().len();
            if len == 0 {
                return;
            }
            let position = ((at * len as f64) as u64).min(len - 1);
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)
                .unwrap();
            let mut byte = [0u8; 1];
            file.read_exact_at(&mut byte, position).unwrap();
            file.write_all_at(&[byte[0] ^ mask], position).unwrap();
        }
        Mangle::ZeroLength { segment, record } => {
            let path = pick(segment);
            let positions = record_positions(&std::fs::read(path).unwrap());
            if positions.is_empty() {
                return;
            }
            let n = ((record * positions.len() as f64) as usize).min(positions.len() - 1);
            let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
            file.write_all_at(&[0; LENGTH_FIELD_BYTES], positions[n] as u64)
                .unwrap();
        }
    }
}

/// How the files were left before the mangling.
#[derive(Debug, Clone, Copy)]
struct Shape {
    mapped: bool,
    /// MAPPED: the last segment still pre-sized with zeros, as a crash leaves it.
    unclean_mapped_tail: bool,
    /// MAPPED: the sealed segments still pre-sized too, as a crash right after rolls leaves
    /// them (their trim need not be durable).
    untrimmed_sealed_segments: bool,
}

fn check(shape: Shape, lens: &[usize], mangles: &[Mangle]) -> Result<(), TestCaseError> {
    let Shape {
        mapped,
        unclean_mapped_tail,
        untrimmed_sealed_segments,
    } = shape;
    let mode = if mapped {
        WriteMode::Mapped
    } else {
        WriteMode::File
    };
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), mode, SEGMENT_BYTES);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let written: Vec<Vec<u8>> = lens
        .iter()
        .enumerate()
        .map(|(n, len)| payload(n as u64, *len))
        .collect();
    {
        let storage = open(&config).unwrap();
        let partition = partition(&storage);
        runtime.block_on(async {
            for chunk in written.chunks(3) {
                partition
                    .append(records(chunk), AckPolicy::Written)
                    .await
                    .unwrap();
            }
        });
        storage.close().unwrap();
    }
    let files = segment_files(dir.path());
    for (n, path) in files.iter().enumerate() {
        let is_last = n + 1 == files.len();
        if (is_last && unclean_mapped_tail) || (!is_last && untrimmed_sealed_segments) {
            std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .unwrap()
                .set_len(SEGMENT_BYTES)
                .unwrap();
        }
    }
    for m in mangles {
        apply(dir.path(), m);
    }
    let before = snapshot(dir.path());
    match open(&config) {
        Ok(storage) => {
            let partition = partition(&storage);
            prop_assert_eq!(partition.log_start_offset(), 0);
            // Every quarantine file holds bytes of a segment as the damage left them, from the
            // byte its name gives: the tail cut from the last segment, or (at byte 0) a whole
            // last segment moved aside because the one before it, untrimmed, was damaged — what
            // an unfinished seal leaves (`recovery.rs`, rule 3).
            let quarantines: Vec<_> = snapshot(dir.path())
                .into_iter()
                .filter(|(name, _)| name.to_string_lossy().ends_with(".quarantine"))
                .collect();
            for (name, quarantine) in &quarantines {
                // `<n>-<segment file name>-at-<byte>.quarantine`
                let name_text = name.to_string_lossy();
                let (segment_name, at) = name_text
                    .strip_suffix(".quarantine")
                    .and_then(|rest| rest.split_once('-'))
                    .and_then(|(_, rest)| rest.rsplit_once("-at-"))
                    .expect("a quarantine file name");
                let end: usize = at.parse().unwrap();
                let (_, original) = before
                    .iter()
                    .find(|(n, _)| n.to_string_lossy() == segment_name)
                    .unwrap();
                prop_assert_eq!(
                    &original[end..end + quarantine.len()],
                    &quarantine[..],
                    "{:?} is not what the segment held there",
                    name
                );
            }
            if let RecoveredEnd::Quarantined { quarantined_bytes } = partition.stats().recovered_end
            {
                // The last one written holds the bytes cut from the last segment.
                let (_, newest) = quarantines.iter().max().expect("a quarantine file");
                prop_assert_eq!(newest.len() as u64, quarantined_bytes);
            }
            // `read_all` asserts every CRC and that offsets are consecutive.
            let log = read_all(&partition);
            prop_assert!(log.len() <= written.len());
            for (offset, got) in &log {
                prop_assert_eq!(got, &written[*offset as usize], "record {} altered", offset);
            }
            // The log goes on from its end.
            let next = runtime
                .block_on(partition.append(records(&[b"next"]), AckPolicy::Written))
                .unwrap()
                .unwrap();
            prop_assert_eq!(next.base_offset, log.len() as i64);
            storage.close().unwrap();
        }
        Err(StorageError::Corrupt { .. }) => {
            // Refusing is only honest if nothing was cut first: the operator must find the
            // files as the damage left them.
            prop_assert!(
                snapshot(dir.path()) == before,
                "a refused open changed the files of the partition"
            );
        }
        Err(other) => return Err(TestCaseError::fail(format!("unexpected error: {other}"))),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn a_mangled_log_reopens_with_an_intact_prefix_or_refuses_as_corrupt(
        mapped in any::<bool>(),
        lens in proptest::collection::vec(1usize..300, 1..40),
        unclean_mapped_tail in any::<bool>(),
        untrimmed_sealed_segments in any::<bool>(),
        mangles in proptest::collection::vec(mangle(), 1..4),
    ) {
        let shape = Shape {
            mapped,
            unclean_mapped_tail: unclean_mapped_tail && mapped,
            untrimmed_sealed_segments: untrimmed_sealed_segments && mapped,
        };
        check(shape, &lens, &mangles)?;
    }
}

#[test]
fn an_untouched_log_reopens_whole() {
    // The property's baseline: with no damage, everything comes back.
    for mapped in [true, false] {
        let shape = Shape {
            mapped,
            unclean_mapped_tail: mapped,
            untrimmed_sealed_segments: mapped,
        };
        check(shape, &[5, 100, 300, 7, 250, 250, 1], &[]).unwrap();
    }
}

#[test]
fn a_zeroed_length_in_a_sealed_segment_refuses_and_changes_nothing() {
    // A case the property must catch, pinned: the first record of the first of several
    // segments. Cutting there would delete acknowledged records of a sealed segment.
    for mapped in [true, false] {
        let shape = Shape {
            mapped,
            unclean_mapped_tail: false,
            untrimmed_sealed_segments: false,
        };
        let lens = [200; 12];
        let zero_first = Mangle::ZeroLength {
            segment: 0.0,
            record: 0.0,
        };
        check(shape, &lens, &[zero_first]).unwrap();
    }
}
