//! The real `booblik-broker` binary, SIGKILLed at random moments under produce load and
//! restarted on the same data directory, never loses or changes a record it acknowledged:
//!
//! * every FORCED-acknowledged record is present after the restart, byte for byte, at the
//!   offset it was acknowledged with (FORCED means an fsync covered it: it would survive a power
//!   loss too, which no test here can cut);
//! * every WRITTEN-acknowledged record is present as well: a killed *process* loses nothing
//!   already written, because the bytes are in the kernel's page cache (a write into a MAPPED
//!   segment's shared mapping lands there too), which outlives the process. A machine crash or
//!   power loss is different: WRITTEN bytes not yet fsynced may then be lost; see
//!   `docs/reliability.md`;
//! * the recovered log is whole: offsets `0..high watermark` are all readable, every record's
//!   CRC matches, every record is one some producer really sent (no garbage, no half record
//!   promoted to a record), and none appears twice.
//!
//! Each round restarts the broker (recovery runs on what the previous kill left), checks all of
//! the above against everything acknowledged in *all* earlier rounds, drives load from several
//! producers over two partitions with small segments (so segments roll and seal during the
//! load), and kills it after a random delay. Every third round a broker is also killed while it
//! starts, so recovery itself is interrupted. Both write modes, as two tests.

mod support;

mod crash_support;

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::time::Duration;

use booblik_protocol::AckPolicy;
use crash_support::{BrokerProcess, Conn, assert_log_has_no_panic, read_partition};
use rand::Rng;

/// Kill-and-restart rounds per write mode, unless `BOOBLIK_CRASH_ROUNDS` says otherwise (the
/// long run of `docs/reliability.md` §1 uses 100).
const DEFAULT_ROUNDS: u32 = 12;

fn rounds() -> u32 {
    match std::env::var("BOOBLIK_CRASH_ROUNDS") {
        Ok(value) => value
            .parse()
            .ok()
            .filter(|&rounds| rounds > 0)
            .unwrap_or_else(|| panic!("BOOBLIK_CRASH_ROUNDS={value} is not a positive number")),
        Err(_) => DEFAULT_ROUNDS,
    }
}
/// Producers acknowledged after an fsync.
const FORCED_PRODUCERS: u32 = 4;
/// Producers acknowledged once the bytes are written.
const WRITTEN_PRODUCERS: u32 = 2;
/// Partitions of the topic; producer `p` writes to partition `p % PARTITIONS`.
const PARTITIONS: i32 = 2;
const TOPIC: &str = "crash";
/// Small segments, so the load rolls several per round.
const SEGMENT_BYTES: &str = "65536";
/// The broker is killed this long after the load starts, chosen at random per round.
const LOAD_MS: std::ops::Range<u64> = 100..700;
/// Every this many rounds, an extra broker is killed while it starts (during recovery).
const KILL_DURING_START_EVERY: u32 = 3;
/// ... this long after it was spawned.
const KILL_DURING_START_MS: std::ops::Range<u64> = 0..60;
/// Largest payload the producers send.
const MAX_PAYLOAD_BYTES: usize = 400;
/// Records per batch: 1..=this.
const MAX_BATCH_RECORDS: u64 = 4;

/// Record `index` of batch `seq` of `producer` in `round`: starts with its own label, so any
/// record found in the log can be traced to the produce that sent it.
fn payload(round: u32, producer: u32, seq: u64, index: u64) -> Vec<u8> {
    let mut bytes = format!("r{round}-p{producer}-s{seq}-i{index}:").into_bytes();
    let len = 1
        + (round as usize * 7 + producer as usize * 13 + seq as usize * 31 + index as usize * 17)
            % MAX_PAYLOAD_BYTES;
    let seed = (round as usize) ^ ((producer as usize) << 8) ^ ((seq as usize) << 16);
    while bytes.len() < len {
        bytes.push((seed.wrapping_add(bytes.len() * 131) % 251) as u8);
    }
    bytes
}

/// The label of a record found in the log, after checking the record is exactly what
/// [`payload`] makes for that label.
fn checked_label(record: &[u8]) -> String {
    let text_end = record
        .iter()
        .position(|&b| b == b':')
        .unwrap_or_else(|| panic!("a record without a label: {record:02x?}"));
    let label = std::str::from_utf8(&record[..text_end]).expect("a UTF-8 label");
    let fields: Vec<u64> = label
        .split('-')
        .map(|f| f[1..].parse().expect("a numeric label field"))
        .collect();
    let [round, producer, seq, index] = fields[..] else {
        panic!("a malformed label {label:?}");
    };
    assert_eq!(
        record,
        payload(round as u32, producer as u32, seq, index).as_slice(),
        "the record labelled {label} is not the one produced"
    );
    label.to_owned()
}

/// One acknowledged record.
#[derive(Debug, Clone)]
struct Acked {
    payload: Vec<u8>,
    ack: AckPolicy,
}

/// A producer: batches of 1..=4 records with its ack policy, one at a time, until the broker
/// dies. Returns `(partition, offset, record)` for every acknowledged record.
async fn produce_until_killed(
    addr: std::net::SocketAddr,
    round: u32,
    producer: u32,
    ack: AckPolicy,
) -> Vec<(i32, i64, Acked)> {
    let partition = (producer as i32) % PARTITIONS;
    let mut acked = Vec::new();
    let Some(mut conn) = Conn::connect(addr).await else {
        return acked;
    };
    for seq in 0u64.. {
        let count = 1 + seq % MAX_BATCH_RECORDS;
        let payloads: Vec<Vec<u8>> = (0..count)
            .map(|index| payload(round, producer, seq, index))
            .collect();
        let refs: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
        let Some(base) = conn.produce(seq as i32, TOPIC, partition, ack, &refs).await else {
            return acked;
        };
        for (index, payload) in payloads.into_iter().enumerate() {
            acked.push((partition, base + index as i64, Acked { payload, ack }));
        }
    }
    unreachable!()
}

/// What the recovered log of a broker must show; returns the records per partition.
async fn verify(
    broker: &BrokerProcess,
    acked: &BTreeMap<(i32, i64), Acked>,
    mode: &str,
    round: u32,
) -> Vec<usize> {
    let mut lengths = Vec::new();
    for partition in 0..PARTITIONS {
        let log = read_partition(broker.addr(), TOPIC, partition).await;
        let mut labels = HashSet::with_capacity(log.len());
        for record in &log {
            let label = checked_label(record);
            assert!(
                labels.insert(label.clone()),
                "{mode} round {round}: record {label} appears twice in partition {partition}"
            );
        }
        for ((_, offset), record) in acked.range((partition, 0)..(partition + 1, 0)) {
            let found = log.get(*offset as usize).unwrap_or_else(|| {
                panic!(
                    "{mode} round {round}: {:?}-acknowledged offset {offset} of partition \
                     {partition} is past the recovered end {}",
                    record.ack,
                    log.len()
                )
            });
            assert_eq!(
                found, &record.payload,
                "{mode} round {round}: {:?}-acknowledged record {offset} of partition {partition} \
                 changed",
                record.ack
            );
        }
        lengths.push(log.len());
    }
    lengths
}

async fn acknowledged_records_survive_repeated_sigkill(mode: &str) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log_path = |n: u32| dir.path().join(format!("broker-{n}.log"));
    let topics = format!("{TOPIC}:{PARTITIONS}");
    let args = [
        "--topics",
        topics.as_str(),
        "--write-mode",
        mode,
        "--segment-bytes",
        SEGMENT_BYTES,
    ];
    let mut acked: BTreeMap<(i32, i64), Acked> = BTreeMap::new();
    let mut kills_with_acks = 0;
    let mut kills_during_start = 0;
    let mut starts = 0u32;
    let mut broker = BrokerProcess::start(&data, &log_path(starts), &args).await;
    let rounds = rounds();
    for round in 0..rounds {
        verify(&broker, &acked, mode, round).await;

        let addr = broker.addr();
        let producers: Vec<_> = (0..FORCED_PRODUCERS + WRITTEN_PRODUCERS)
            .map(|producer| {
                let ack = if producer < FORCED_PRODUCERS {
                    AckPolicy::Forced
                } else {
                    AckPolicy::Written
                };
                tokio::spawn(produce_until_killed(addr, round, producer, ack))
            })
            .collect();
        let load_ms = rand::rng().random_range(LOAD_MS);
        tokio::time::sleep(Duration::from_millis(load_ms)).await;
        broker.assert_no_panic();
        broker.kill();

        let mut round_acks = 0;
        for producer in producers {
            for (partition, offset, record) in producer.await.unwrap() {
                round_acks += 1;
                let previous = acked.insert((partition, offset), record);
                assert!(
                    previous.is_none(),
                    "{mode} round {round}: offset {offset} of partition {partition} acknowledged twice"
                );
            }
        }
        if round_acks > 0 {
            kills_with_acks += 1;
        }

        if round % KILL_DURING_START_EVERY == KILL_DURING_START_EVERY - 1 {
            starts += 1;
            let after = rand::rng().random_range(KILL_DURING_START_MS);
            BrokerProcess::start_and_kill_after(
                &data,
                &log_path(starts),
                &args,
                Duration::from_millis(after),
            )
            .await;
            assert_log_has_no_panic(&log_path(starts));
            kills_during_start += 1;
        }
        starts += 1;
        broker = BrokerProcess::start(&data, &log_path(starts), &args).await;
    }
    let lengths = verify(&broker, &acked, mode, rounds).await;
    broker.assert_no_panic();
    broker.terminate();
    assert_log_has_no_panic(&log_path(starts));

    let forced = acked
        .values()
        .filter(|r| r.ack == AckPolicy::Forced)
        .count();
    let written = acked.len() - forced;
    eprintln!(
        "{mode}: {rounds} SIGKILLs under load ({kills_with_acks} after acknowledgements) and \
         {kills_during_start} during start; verified {forced} FORCED and {written} WRITTEN \
         acknowledged records; recovered log lengths {lengths:?}; data dir {} bytes",
        dir_bytes(&data)
    );
    assert!(
        forced > 0 && written > 0,
        "{mode}: the load acknowledged too little to test anything ({forced} FORCED, {written} WRITTEN)"
    );
    assert!(
        kills_with_acks * 2 >= rounds,
        "{mode}: only {kills_with_acks} of {rounds} rounds acknowledged anything before the kill"
    );
}

/// Bytes of all segment files under `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .flat_map(|partition| std::fs::read_dir(partition).unwrap())
        .map(|entry| entry.unwrap().metadata().unwrap().len())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_records_survive_sigkill_of_a_mapped_broker() {
    acknowledged_records_survive_repeated_sigkill("mapped").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_records_survive_sigkill_of_a_file_broker() {
    acknowledged_records_survive_repeated_sigkill("file").await;
}
