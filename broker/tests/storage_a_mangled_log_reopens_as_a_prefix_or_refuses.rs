//! Whatever happens to the bytes of a closed log — cut at any point, bytes flipped anywhere,
//! an unclean MAPPED tail — reopening either yields a prefix of the records written, each intact,
//! or refuses with `Corrupt`. It never panics and never returns an altered record.

mod storage_support;

use std::os::unix::fs::FileExt;

use booblik_broker::storage::{StorageError, WriteMode};
use booblik_protocol::AckPolicy;
use proptest::prelude::*;
use storage_support::{config, open, partition, payload, read_all, records, segment_files};

const SEGMENT_BYTES: u64 = 1024;

/// One thing done to the files: which segment (as a fraction of the segment count), and what.
#[derive(Debug, Clone)]
enum Mangle {
    /// Truncate the segment at `at` (a fraction of its length).
    Truncate { segment: f64, at: f64 },
    /// XOR the byte at `at` (a fraction of the length) with `mask` (never 0).
    Flip { segment: f64, at: f64, mask: u8 },
}

fn mangle() -> impl Strategy<Value = Mangle> {
    prop_oneof![
        (0.0..1.0f64, 0.0..1.0f64).prop_map(|(segment, at)| Mangle::Truncate { segment, at }),
        (0.0..1.0f64, 0.0..1.0f64, 1..=255u8).prop_map(|(segment, at, mask)| Mangle::Flip {
            segment,
            at,
            mask
        }),
    ]
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
    }
}

fn check(
    mapped: bool,
    lens: &[usize],
    unclean_mapped_tail: bool,
    mangles: &[Mangle],
) -> Result<(), TestCaseError> {
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
    if unclean_mapped_tail {
        // What a crash leaves in MAPPED mode: the last segment still pre-sized with zeros.
        let files = segment_files(dir.path());
        let last = files.last().unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(last)
            .unwrap()
            .set_len(SEGMENT_BYTES)
            .unwrap();
    }
    for m in mangles {
        apply(dir.path(), m);
    }
    match open(&config) {
        Ok(storage) => {
            let partition = partition(&storage);
            prop_assert_eq!(partition.log_start_offset(), 0);
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
        Err(StorageError::Corrupt { .. }) => {}
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
        mangles in proptest::collection::vec(mangle(), 1..4),
    ) {
        check(mapped, &lens, unclean_mapped_tail && mapped, &mangles)?;
    }
}

#[test]
fn an_untouched_log_reopens_whole() {
    // The property's baseline: with no damage, everything comes back.
    for mapped in [true, false] {
        check(mapped, &[5, 100, 300, 7, 250, 250, 1], mapped, &[]).unwrap();
    }
}
