//! Shared by the relay tests: both sides started here, a steady producer, the relay binary as a
//! child process, and a check of what landed in the target.

#![allow(dead_code)] // Each test file uses a different subset.

#[cfg(feature = "kafka")]
pub mod kafka;

// The events tests' HTTP helpers, one copy for both (as `engine_samples_support` does).
#[path = "../events_support/mod.rs"]
mod events_support;

#[allow(unused_imports)] // Only the test of `--stats-bind` scrapes.
pub use events_support::{free_addr, get_json};

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use booblik_broker::Broker;
use booblik_client::{Client, ConnectionConfig};
use booblik_samples::engine::{Ack, BooblikEngine, LogEngine, PartitionLog, ReadLimits};
use booblik_samples::relay::Summary;
use booblik_samples::support::embedded_broker;
use booblik_samples::support::shutdown::Shutdown;
use bytes::Bytes;

/// Partitions of every relayed topic in these tests.
pub const PARTITIONS: i32 = 2;
/// The relay's batch in the crash loops: the bound on one crash's duplicates per partition.
pub const BATCH: usize = 100;

/// A broker with `topics` (`name:partitions,…`) on a free port, its log in `dir`.
pub async fn start_broker(dir: &Path, topics: &str) -> Broker {
    embedded_broker::start(dir, "127.0.0.1:0".parse().unwrap(), topics)
        .await
        .expect("the embedded broker starts")
}

/// The booblik engine over `broker`.
pub async fn booblik(broker: &Broker) -> BooblikEngine {
    let client = Client::connect(broker.local_addr().to_string(), ConnectionConfig::default())
        .await
        .expect("the client connects");
    BooblikEngine::new(client)
}

/// The payload of the `n`th record produced into partition `p`.
pub fn payload(p: i32, n: u64) -> Bytes {
    Bytes::from(format!("p{p}-{n:010}"))
}

fn parse_payload(p: i32, bytes: &[u8]) -> u64 {
    let text = std::str::from_utf8(bytes).expect("a test payload is text");
    let rest = text
        .strip_prefix(&format!("p{p}-"))
        .unwrap_or_else(|| panic!("{text:?} in partition {p}: relayed to the wrong partition"));
    rest.parse().unwrap()
}

/// Appends `count` records to every partition, in batches of `batch`. Returns the count.
pub async fn produce(engine: &dyn LogEngine, topic: &str, count: u64, batch: u64) -> u64 {
    for p in 0..PARTITIONS {
        let log = engine.open(topic, p).await.unwrap();
        let mut n = 0;
        while n < count {
            let records: Vec<Bytes> = (n..(n + batch).min(count)).map(|i| payload(p, i)).collect();
            log.append(&records, Ack::Written).await.unwrap();
            n += records.len() as u64;
        }
    }
    count
}

/// A producer writing the source until it is stopped.
pub struct Producer {
    task: tokio::task::JoinHandle<u64>,
    stop: Shutdown,
}

impl Producer {
    /// Runs `write` as a task, handing it the signal to stop on.
    pub fn spawn<F>(write: impl FnOnce(Shutdown) -> F) -> Self
    where
        F: Future<Output = u64> + Send + 'static,
    {
        let stop = Shutdown::new();
        let task = tokio::spawn(write(stop.clone()));
        Self { task, stop }
    }

    /// Stops the producer; returns how many records each partition got.
    pub async fn stop(self) -> u64 {
        self.stop.trigger();
        self.task.await.unwrap()
    }
}

/// Produces into every partition in small batches until stopped; [`Producer::stop`] returns how
/// many records each partition got (the same number for all).
pub fn produce_until(engine: Arc<dyn LogEngine>, topic: &str) -> Producer {
    let topic = topic.to_owned();
    Producer::spawn(|stop| async move {
        let mut logs = Vec::new();
        for p in 0..PARTITIONS {
            logs.push(engine.open(&topic, p).await.unwrap());
        }
        let mut n = 0u64;
        while !stop.is_triggered() {
            for (p, log) in logs.iter().enumerate() {
                let records: Vec<Bytes> = (n..n + 20).map(|i| payload(p as i32, i)).collect();
                log.append(&records, Ack::Written).await.unwrap();
            }
            n += 20;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        n
    })
}

/// Every payload of a partition, in order.
pub async fn read_all(log: &dyn PartitionLog) -> Vec<Bytes> {
    let bounds = log.bounds().await.unwrap();
    let mut at = bounds.start;
    let mut out = Vec::new();
    while at < bounds.end {
        let batch = log
            .read(
                at,
                ReadLimits {
                    wait: Duration::ZERO,
                    ..ReadLimits::default()
                },
            )
            .await
            .unwrap();
        out.extend(batch.records.into_iter().map(|r| r.payload));
        at = batch.next_offset;
    }
    out
}

/// What one target partition holds, checked against `produced` records of the source.
#[derive(Debug)]
pub struct Landed {
    /// Records in the target.
    pub records: u64,
    /// Records in the target more than once.
    pub duplicates: u64,
}

/// Reads target partition `p` and panics unless every one of `produced` source records is
/// there, first seen in source order. Returns the count of records seen twice.
pub async fn check_partition(log: &dyn PartitionLog, p: i32, produced: u64) -> Landed {
    check_payloads(&read_all(log).await, p, produced)
}

/// [`check_partition`] over payloads already read (from a target that is not an engine).
pub fn check_payloads(all: &[Bytes], p: i32, produced: u64) -> Landed {
    let mut seen = vec![false; produced as usize];
    let mut next_new = 0u64;
    let mut duplicates = 0;
    for bytes in all {
        let n = parse_payload(p, bytes);
        assert!(n < produced, "partition {p}: record {n} was never produced");
        if seen[n as usize] {
            duplicates += 1;
        } else {
            // A record seen for the first time is the next one in source order: anything else
            // is a record lost (or reordered) before it.
            assert_eq!(
                n, next_new,
                "partition {p}: record {next_new} is missing before {n}"
            );
            seen[n as usize] = true;
            next_new += 1;
        }
    }
    assert_eq!(
        next_new, produced,
        "partition {p}: records {next_new}.. are missing"
    );
    Landed {
        records: all.len() as u64,
        duplicates,
    }
}

/// The relay's command line from `source` to `target` (endpoint URLs), saving its positions
/// under `dir/offsets`, then the flags in `more`.
pub fn relay_args(dir: &Path, source: &str, target: &str, more: &[&str]) -> Vec<String> {
    let offsets = dir.join("offsets");
    let mut args = vec![
        source.to_owned(),
        target.to_owned(),
        "--offsets-dir".to_owned(),
        offsets.to_str().unwrap().to_owned(),
    ];
    args.extend(more.iter().map(|flag| (*flag).to_owned()));
    args
}

/// The relay binary with these arguments, its stdout and stderr into files under `dir`.
pub fn spawn_relay(dir: &Path, round: usize, args: &[impl AsRef<str>]) -> Child {
    let out = std::fs::File::create(dir.join(format!("relay-{round}.out"))).unwrap();
    let err = std::fs::File::create(dir.join(format!("relay-{round}.err"))).unwrap();
    Command::new(env!("CARGO_BIN_EXE_relay"))
        .args(args.iter().map(AsRef::as_ref))
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .expect("the relay binary starts")
}

/// What a finished run left: its summary (when it exited cleanly) and its log.
pub fn outputs(dir: &Path, round: usize) -> (Option<Summary>, String) {
    let out = std::fs::read_to_string(dir.join(format!("relay-{round}.out"))).unwrap();
    let err = std::fs::read_to_string(dir.join(format!("relay-{round}.err"))).unwrap();
    let summary = out
        .lines()
        .last()
        .map(|line| serde_json::from_str(line).expect("the summary is JSON"));
    (summary, err)
}

/// The duplicates a run's log reported at start, by partition (the booblik target's warning).
pub fn logged_duplicates(log: &str) -> BTreeMap<i32, u64> {
    let mut found = BTreeMap::new();
    for line in log.lines().filter(|l| l.contains("written again")) {
        let field = |name: &str| -> u64 {
            line.split_whitespace()
                .find_map(|word| word.strip_prefix(&format!("{name}=")))
                .unwrap_or_else(|| panic!("no {name} in {line:?}"))
                .parse()
                .unwrap()
        };
        *found.entry(field("partition") as i32).or_default() += field("duplicates");
    }
    found
}

/// Runs the relay to the end (`--exit-when-caught-up`) as run `round` and returns its summary
/// and log; panics when it fails.
pub async fn run_to_end(dir: &Path, round: usize, args: &[impl AsRef<str>]) -> (Summary, String) {
    let mut args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
    args.push("--exit-when-caught-up");
    let mut child = spawn_relay(dir, round, &args);
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .unwrap();
    let (summary, log) = outputs(dir, round);
    assert!(status.success(), "run {round} failed: {log}");
    (summary.expect("a clean run prints a summary"), log)
}

/// Runs the relay of `args` to the end a second time (run 1, after run 0 relayed everything)
/// and panics unless it relayed nothing and started each partition at `started_at[p]`: the
/// positions the first run saved.
pub async fn run_again_relays_nothing(dir: &Path, args: &[impl AsRef<str>], started_at: &[i64]) {
    let (second, _) = run_to_end(dir, 1, args).await;
    assert_eq!(
        second.relayed, 0,
        "the second run re-sent records: {second:?}"
    );
    let starts: Vec<i64> = second.partitions.iter().map(|p| p.started_at).collect();
    assert_eq!(starts, started_at, "{second:?}");
}

/// Relay runs in a crash loop that are SIGKILLed mid-stream (one more then runs to the end).
pub const ROUNDS: usize = 20;

/// What a crash loop left.
#[derive(Debug)]
pub struct CrashLoop {
    /// Records produced into each source partition.
    pub produced: u64,
    /// The duplicates each run logged at its start, by run, then by partition.
    pub logged: Vec<BTreeMap<i32, u64>>,
    /// The summary of the last run, the one run to the end.
    pub last: Summary,
    /// Starts that resumed after the target's tail (targets whose records carry their source
    /// position).
    pub tail_resumes: usize,
}

/// Relays `source` to `target` (endpoint URLs) in batches of [`BATCH`] records through
/// [`ROUNDS`] runs, each SIGKILLed after a random 150..600 ms while `producer` keeps writing the
/// source; then stops the producer and runs the relay to the end with `--exit-when-caught-up`.
/// Panics when a run exits early, the last run fails, or nothing was produced.
pub async fn crash_loop(dir: &Path, source: &str, target: &str, producer: Producer) -> CrashLoop {
    let batch = BATCH.to_string();
    let args = relay_args(dir, source, target, &["--batch-max-records", &batch]);
    let mut logged = Vec::new();
    for round in 0..ROUNDS {
        let mut child = spawn_relay(dir, round, &args);
        let wait = 150 + rand::random::<u64>() % 450;
        tokio::time::sleep(Duration::from_millis(wait)).await;
        assert!(
            child.try_wait().unwrap().is_none(),
            "round {round}: the relay exited early: {}",
            outputs(dir, round).1
        );
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        logged.push(logged_duplicates(&outputs(dir, round).1));
    }
    let produced = producer.stop().await;
    assert!(produced > 0, "the producer wrote nothing");
    let (last, log) = run_to_end(dir, ROUNDS, &args).await;
    logged.push(logged_duplicates(&log));
    let tail_resumes = (0..=ROUNDS)
        .map(|round| outputs(dir, round).1)
        .map(|log| log.matches("resuming after its tail").count())
        .sum();
    CrashLoop {
        produced,
        logged,
        last,
        tail_resumes,
    }
}

/// `jetstream://host:port,…/topic` for every node of `cluster`.
pub fn jetstream_url(
    cluster: &booblik_samples::support::nats_cluster::NatsCluster,
    topic: &str,
) -> String {
    let hosts: Vec<String> = cluster
        .urls()
        .iter()
        .map(|u| u.trim_start_matches("nats://").to_owned())
        .collect();
    format!("jetstream://{}/{topic}", hosts.join(","))
}
