//! The power-loss loop through the server: FORCED PRODUCEs pipelined on one connection to an
//! in-process broker whose storage runs over `SimIo`'s power-loss model; every FORCED answer that
//! left the broker is kept after the power loss.
//!
//! Per seed: a broker on one partition (segments of 1–64 KiB, so batches roll), one connection,
//! and up to 40 PRODUCE requests (mostly FORCED, some WRITTEN; 1–4 records of 1 B–3 KiB) written
//! to the socket at once, without waiting for answers, so the session queues many FORCED batches
//! on the writer and their fsyncs are shared. The power goes out at a random I/O call of the
//! storage. The test's client reads every answer the broker sends until it closes the connection
//! (after the power loss every append fails and the session closes) or all are answered. Then the
//! broker is shut down, the disk rewritten to what a power loss leaves (odd seeds: the durable
//! image; seeds 0, 4, …: plus pages in file order; seeds 2, 6, …: plus pages in any order), the
//! storage reopened, and:
//!
//! * recovery accepts the directory;
//! * every record of every FORCED answer that reached the client is there, byte for byte, at the
//!   offset the answer gave;
//! * every record recovered is the one sent at its offset (requests apply in order), gap-free.
//!
//! Why every answer that reached the client counts, however late it was read: the model fails
//! every call from the power loss on, so an fsync that returned `Ok` did so before the power went
//! out, and its durable image is what the disk keeps. A FORCED answer sent after its fsync is
//! therefore always covered; one sent before (a session or writer that answers early) is lost
//! whenever the power goes out between the answer and the fsync, and the client holds the proof
//! — the answer left the broker. No clock is needed to order the answer and the power loss.
//!
//! Seeds: `BOOBLIK_POWER_LOSS_SERVER_SEEDS` (default 1000 per mode) from
//! `BOOBLIK_POWER_LOSS_FIRST_SEED` (default 0); `BOOBLIK_POWER_LOSS_SEED=n` replays one. The
//! workload, the crash call and the disk's choices follow from the seed, but how the writer
//! groups the pipelined batches depends on thread timing, so a replay reproduces the seed's
//! workload, not always the exact interleaving.

mod storage_support;
mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use booblik_broker::parse_topics;
use booblik_broker::storage::test_io::{PowerLoss, SimIo};
use booblik_broker::storage::{Storage, StorageConfig, WriteMode};
use booblik_protocol::{
    AckPolicy, Decoded, ErrorCode, ProduceResponse, WireMessage, decode_response_frame,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use support::{ANSWER_TIMEOUT, TestBroker, produce_request};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Seeds per write mode when the environment does not say.
const DEFAULT_SEEDS: u64 = 1000;
/// PRODUCE requests per seed, at most.
const MAX_REQUESTS: usize = 40;
/// Segment capacities a seed picks from.
const SEGMENT_BYTES: [u64; 4] = [1024, 4096, 16 * 1024, 64 * 1024];
/// Largest payload a seed sends.
const MAX_PAYLOAD_BYTES: usize = 3000;
const TOPIC: &str = "solo";

#[test]
fn power_loss_keeps_every_forced_answer_of_a_pipelined_session_in_mapped_mode() {
    run_seeds(WriteMode::Mapped);
}

#[test]
fn power_loss_keeps_every_forced_answer_of_a_pipelined_session_in_file_mode() {
    run_seeds(WriteMode::File);
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|value| {
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value} is not a number"))
    })
}

fn run_seeds(mode: WriteMode) {
    let seeds = if let Some(seed) = env_u64("BOOBLIK_POWER_LOSS_SEED") {
        seed..seed + 1
    } else {
        let first = env_u64("BOOBLIK_POWER_LOSS_FIRST_SEED").unwrap_or(0);
        first..first + env_u64("BOOBLIK_POWER_LOSS_SERVER_SEEDS").unwrap_or(DEFAULT_SEEDS)
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    let mut forced = 0u64;
    let mut forced_answers = 0u64;
    let mut crashed_mid_run = 0u64;
    let mut recovered = 0u64;
    let mut forced_groups = 0u64;
    for seed in seeds.clone() {
        match runtime.block_on(one_seed(seed, mode)) {
            Ok(run) => {
                forced += run.forced_records;
                forced_answers += run.forced_answers;
                crashed_mid_run += u64::from(run.lost_power_early);
                recovered += run.recovered;
                forced_groups += run.forced_groups;
            }
            Err(failure) => panic!(
                "{mode} seed {seed}: {failure}\nreplay: BOOBLIK_POWER_LOSS_SEED={seed} cargo test \
                 -p booblik-broker --test power_loss_keeps_every_forced_answer_of_a_pipelined_session \
                 power_loss_keeps_every_forced_answer_of_a_pipelined_session_in_{}_mode",
                mode.name()
            ),
        }
    }
    let count = seeds.end - seeds.start;
    eprintln!(
        "{mode} (server): {count} seeds in {:.1} s: {forced_answers} FORCED answers \
         ({forced} records) received, all kept; {forced_groups} group fsyncs answered FORCED \
         appends; {recovered} records recovered; {crashed_mid_run} seeds lost power before the \
         last answer",
        started.elapsed().as_secs_f64(),
    );
    if count >= 100 {
        assert!(forced > count, "too few FORCED answers");
        assert!(crashed_mid_run * 4 > count, "too few mid-run power losses");
    }
}

/// What one seed did.
#[derive(Debug, Default)]
struct Run {
    forced_records: u64,
    forced_answers: u64,
    /// Group-commit fsyncs that answered FORCED appends (fewer than the answers: shared).
    forced_groups: u64,
    lost_power_early: bool,
    recovered: u64,
}

async fn one_seed(seed: u64, mode: WriteMode) -> Result<Run, String> {
    let mut rng = StdRng::seed_from_u64(seed ^ (mode as u64) << 63);
    let sim = Arc::new(SimIo::with_power_loss());
    let io = Arc::clone(&sim);
    let segment_bytes = SEGMENT_BYTES[rng.random_range(0..4)];
    let storage_config: Arc<Mutex<Option<StorageConfig>>> = Arc::default();
    let saved = Arc::clone(&storage_config);
    let broker = TestBroker::start_with(move |config| {
        config.topics = parse_topics(&format!("{TOPIC}:1")).unwrap();
        config.storage.io = io;
        config.storage.segment_bytes = segment_bytes;
        config.storage.write_mode = mode;
        *saved.lock().unwrap() = Some(config.storage.clone());
    })
    .await;
    let storage_config = storage_config.lock().unwrap().take().unwrap();
    let max_payload = (segment_bytes as usize - 8).min(MAX_PAYLOAD_BYTES);

    // The requests, in the order they apply: request n's records follow request n-1's.
    let requests = rng.random_range(1..=MAX_REQUESTS);
    let mut sent: Vec<(AckPolicy, Vec<Vec<u8>>)> = Vec::with_capacity(requests);
    let mut bytes = Vec::new();
    for id in 0..requests {
        let ack = if rng.random_bool(0.75) {
            AckPolicy::Forced
        } else {
            AckPolicy::Written
        };
        let batch: Vec<Vec<u8>> = (0..rng.random_range(1..=4))
            .map(|n| {
                let len = if rng.random_bool(0.2) {
                    rng.random_range(1..=max_payload)
                } else {
                    rng.random_range(1..=max_payload.min(200))
                };
                let mut payload = format!("q{id}r{n}-").into_bytes();
                let tag = payload.len();
                payload.resize(len.max(tag), 0);
                rng.fill(&mut payload[tag..]);
                payload
            })
            .collect();
        let refs: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
        produce_request(id as i32, TOPIC, 0, ack, &refs).encode(&mut bytes);
        sent.push((ack, batch));
    }
    let appended: Vec<&Vec<u8>> = sent.iter().flat_map(|(_, batch)| batch).collect();
    sim.crash_after(rng.random_range(1..=requests as u64 * 2));

    let stream = TcpStream::connect(broker.broker.local_addr())
        .await
        .map_err(|e| format!("connect: {e}"))?;
    stream.set_nodelay(true).unwrap();
    let (mut read, mut write) = stream.into_split();
    // The whole pipeline at once, from its own task: the broker may close the connection after
    // the power loss while this is still being written, so a failed write is expected.
    let writing = tokio::spawn(async move {
        let _ = write.write_all(&bytes).await;
        // Dropping the write half half-closes: the session answers what it read, then closes.
    });

    // FORCED answers that reached the client: offset → payload.
    let mut forced: BTreeMap<i64, Vec<u8>> = BTreeMap::new();
    let mut run = Run::default();
    let mut buf = Vec::new();
    let mut answered = 0usize;
    let deadline = tokio::time::Instant::now() + ANSWER_TIMEOUT;
    while answered < requests {
        if let Decoded::Complete { value, used } =
            decode_response_frame(&buf).map_err(|e| format!("bad response frame: {e}"))?
        {
            let id = value.header.correlation_id;
            if id != answered as i32 {
                return Err(format!(
                    "answer {id} arrived where {answered} was next: answers out of order"
                ));
            }
            let (ack, batch) = &sent[answered];
            if value.header.error_code == ErrorCode::None {
                let produced = ProduceResponse::decode(value.body)
                    .map_err(|e| format!("bad PRODUCE answer: {e:?}"))?
                    .0;
                let base: usize = sent[..answered].iter().map(|(_, b)| b.len()).sum();
                if produced.base_offset != base as i64 {
                    return Err(format!(
                        "request {id} got offset {} where {base} was next",
                        produced.base_offset
                    ));
                }
                if *ack == AckPolicy::Forced {
                    for (n, payload) in batch.iter().enumerate() {
                        forced.insert(produced.base_offset + n as i64, payload.clone());
                    }
                    run.forced_answers += 1;
                    run.forced_records += batch.len() as u64;
                }
            }
            buf.drain(..used);
            answered += 1;
            continue;
        }
        match tokio::time::timeout_at(deadline, read.read_buf(&mut buf)).await {
            Err(_) => {
                return Err(format!(
                    "only {answered} of {requests} answered within {ANSWER_TIMEOUT:?}, and the \
                     connection is still open"
                ));
            }
            // Closed (the power went out and the session gave up), or reset mid-answer.
            Ok(Ok(0) | Err(_)) => break,
            Ok(Ok(_)) => {}
        }
    }
    run.lost_power_early = sim.has_crashed();
    sim.crash_now().unwrap();
    drop(read);
    let _ = writing.await;
    // The power is out: the final syncs fail, and that is expected.
    let TestBroker { broker, dir } = broker;
    run.forced_groups = broker
        .storage()
        .partition(TOPIC, 0)
        .unwrap()
        .stats()
        .forced_groups;
    let _ = broker.shutdown().await;

    let loss = match seed % 4 {
        0 => PowerLoss::InOrder { seed },
        2 => PowerLoss::AnyOrder { seed },
        _ => PowerLoss::DurableOnly,
    };
    let report = sim.power_loss(loss).unwrap();
    let topics = [(booblik_protocol::TopicName::new(TOPIC).unwrap(), 1)];
    let storage = Storage::open(storage_config, &topics).map_err(|error| {
        format!("recovery refused what a power loss ({loss:?}, {report:?}) left: {error}")
    })?;
    let partition = Arc::clone(storage.partition(TOPIC, 0).unwrap());
    let log = storage_support::read_all(&partition);
    run.recovered = log.len() as u64;
    for (offset, payload) in &log {
        if appended.get(*offset as usize) != Some(&payload) {
            return Err(format!(
                "offset {offset} holds {} bytes that were not sent there",
                payload.len()
            ));
        }
    }
    let high_watermark = partition.high_watermark();
    for (offset, payload) in &forced {
        if *offset >= high_watermark {
            return Err(format!(
                "FORCED-answered record {offset} lost: the log ends at {high_watermark} \
                 ({loss:?}, {report:?})"
            ));
        }
        if &log[*offset as usize].1 != payload {
            return Err(format!("FORCED-answered record {offset} changed"));
        }
    }
    drop(partition);
    storage.close().map_err(|e| format!("close: {e}"))?;
    drop(dir);
    Ok(run)
}
