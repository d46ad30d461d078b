//! A process killed at a random moment loses nothing it acknowledged: a child process appends
//! with FORCED acks (several producers, small segments so it rolls) and prints each
//! acknowledged batch; the parent SIGKILLs it at random, reopens the log, and checks that every
//! acknowledged record is present, intact and at its offset, with no gaps. Many rounds on the
//! same directory, so recovery also runs on logs that earlier rounds recovered.
//!
//! The child is this same test binary, re-executed with `CHILD_DIR_ENV` set.

mod storage_support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use booblik_broker::storage::WriteMode;
use booblik_protocol::AckPolicy;
use rand::Rng;
use storage_support::{config, open, partition, read_all, records};

const TEST_NAME: &str = "forced_acknowledged_records_survive_sigkill_at_random_moments";
const CHILD_DIR_ENV: &str = "BOOBLIK_STORAGE_CRASH_CHILD_DIR";
const CHILD_MODE_ENV: &str = "BOOBLIK_STORAGE_CRASH_CHILD_MODE";
const CHILD_ROUND_ENV: &str = "BOOBLIK_STORAGE_CRASH_CHILD_ROUND";
const ROUNDS_PER_MODE: u32 = 12;
/// The child is killed this long after it starts, chosen at random per round.
const KILL_AFTER_MS: std::ops::Range<u64> = 20..400;
const PRODUCERS: u32 = 4;
const SEGMENT_BYTES: u64 = 16 * 1024;

/// The payload of record `index` of batch `seq` of `producer` in `round`: unique, and its
/// length varies.
fn crash_payload(round: u32, producer: u32, seq: u64, index: u32) -> Vec<u8> {
    let mut bytes = format!("r{round}-p{producer}-s{seq}-i{index}:").into_bytes();
    let len = 1
        + (round as usize * 7 + producer as usize * 13 + seq as usize * 31 + index as usize * 17)
            % 300;
    let fill = bytes.len() as u8;
    bytes.resize(bytes.len().max(len), fill);
    bytes
}

#[test]
fn forced_acknowledged_records_survive_sigkill_at_random_moments() {
    if let Ok(dir) = std::env::var(CHILD_DIR_ENV) {
        run_child(&dir);
        return;
    }
    for mode in [WriteMode::Mapped, WriteMode::File] {
        let dir = tempfile::tempdir().unwrap();
        let mut acknowledged: BTreeMap<i64, Vec<u8>> = BTreeMap::new();
        let mut kills_with_acks = 0;
        for round in 0..ROUNDS_PER_MODE {
            let acks = run_and_kill_child(dir.path(), mode, round);
            if !acks.is_empty() {
                kills_with_acks += 1;
            }
            for (offset, payload) in acks {
                assert!(
                    acknowledged.insert(offset, payload).is_none(),
                    "offset {offset} acknowledged twice"
                );
            }
            verify(dir.path(), mode, &acknowledged, round);
        }
        eprintln!(
            "{mode:?}: {ROUNDS_PER_MODE} kills, {kills_with_acks} after acknowledgements, {} acknowledged records verified",
            acknowledged.len()
        );
        assert!(
            kills_with_acks > 0,
            "{mode:?}: no round acknowledged anything before the kill"
        );
    }
}

/// Starts the child, kills it at a random moment, returns the records it acknowledged.
fn run_and_kill_child(dir: &std::path::Path, mode: WriteMode, round: u32) -> Vec<(i64, Vec<u8>)> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([TEST_NAME, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_DIR_ENV, dir)
        .env(CHILD_MODE_ENV, mode.name())
        .env(CHILD_ROUND_ENV, round.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<String>>()
    });
    let delay = rand::rng().random_range(KILL_AFTER_MS);
    std::thread::sleep(Duration::from_millis(delay));
    child.kill().unwrap();
    child.wait().unwrap();
    let lines = reader.join().unwrap();
    let mut acks = Vec::new();
    for line in lines {
        // "ack <base> <producer> <seq> <count>"; a line cut by the kill has no newline and is
        // dropped by `lines()` only if incomplete fields fail to parse.
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() != 5 || fields[0] != "ack" {
            continue;
        }
        let (Ok(base), Ok(producer), Ok(seq), Ok(count)) = (
            fields[1].parse::<i64>(),
            fields[2].parse::<u32>(),
            fields[3].parse::<u64>(),
            fields[4].parse::<u32>(),
        ) else {
            continue;
        };
        for index in 0..count {
            acks.push((
                base + i64::from(index),
                crash_payload(round, producer, seq, index),
            ));
        }
    }
    acks
}

fn verify(
    dir: &std::path::Path,
    mode: WriteMode,
    acknowledged: &BTreeMap<i64, Vec<u8>>,
    round: u32,
) {
    let storage = open(&config(dir, mode, SEGMENT_BYTES))
        .unwrap_or_else(|e| panic!("{mode:?} round {round}: reopening after SIGKILL failed: {e}"));
    let partition = partition(&storage);
    let log = read_all(&partition);
    // `read_all` yields consecutive offsets from 0 with CRC-checked payloads.
    assert_eq!(partition.log_start_offset(), 0);
    if let Some((&last, _)) = acknowledged.last_key_value() {
        assert!(
            partition.high_watermark() > last,
            "{mode:?} round {round}: acknowledged offset {last} is beyond the recovered end {}",
            partition.high_watermark()
        );
    }
    for (offset, payload) in acknowledged {
        assert_eq!(
            &log[*offset as usize].1, payload,
            "{mode:?} round {round}: acknowledged record {offset} differs"
        );
    }
    storage.close().unwrap();
}

/// The child: append FORCED batches from several producers until killed, printing each ack.
fn run_child(dir: &str) {
    let mode: WriteMode = std::env::var(CHILD_MODE_ENV).unwrap().parse().unwrap();
    let round: u32 = std::env::var(CHILD_ROUND_ENV).unwrap().parse().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let storage = open(&config(std::path::Path::new(dir), mode, SEGMENT_BYTES)).unwrap();
    let partition = partition(&storage);
    runtime.block_on(async {
        let mut tasks = Vec::new();
        for producer in 0..PRODUCERS {
            let partition = Arc::clone(&partition);
            tasks.push(tokio::spawn(async move {
                for seq in 0u64.. {
                    let count = 1 + (seq % 5) as u32;
                    let payloads: Vec<Vec<u8>> = (0..count)
                        .map(|index| crash_payload(round, producer, seq, index))
                        .collect();
                    let appended = partition
                        .append(records(&payloads), AckPolicy::Forced)
                        .await
                        .unwrap()
                        .unwrap();
                    println!("ack {} {producer} {seq} {count}", appended.base_offset);
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
    });
}
