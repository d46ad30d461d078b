//! The fetch workload: FETCH throughput and CPU per GiB, zero-copy (`sendfile`) against heap
//! (read into a buffer, then write).
//!
//! Method. The broker runs as a **child process** so its CPU time can be read on its own from
//! `/proc/<pid>/stat`; the client's is this process's `getrusage`. A child broker in zero-copy
//! mode is started over a fresh data directory and filled with `data_mib` of 1 KiB records
//! (these writes are not measured); then the partition is read from the start to the end,
//! `passes` times, by each reader; then the child is stopped and a heap-mode child is started over
//! the same directory (the data is in the page cache for both) and read the same way. That is one
//! **round**; rounds repeat the pair (zero-copy, heap, zero-copy, heap, …) so that a drift in
//! the machine's load — it is shared — does not land on one mode only. Each figure is the total
//! over all rounds; the slowest and fastest round are reported beside it.
//!
//! Raw loopback TCP throughput swings by a factor of two from one minute to the next on a shared
//! VM, so each round also measures it (the baseline's method, as many bytes as one mode reads)
//! right before its two modes, and every fetch figure is also given as a ratio to that
//! **adjacent** TCP figure, beside the ratio to the invocation's baseline.
//!
//! Two readers:
//! * `raw` — FETCH with the largest `maxBytes` on a connection, counting whole records without
//!   checking their CRC: the broker's and the wire's cost with the client nearly idle;
//! * `consumer` — the client's [`Consumer`](booblik_client::Consumer), which verifies every
//!   record's CRC-32C as any real consumer must.
//!
//! FETCH requests are sequential (a reader cannot ask for the next offset before it has counted
//! the records of the last answer), so each request pays one round trip; the largest payload
//! (8 MiB − 18 B) amortises it.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::{Context, ensure};
use booblik_broker::FetchMode;
use booblik_client::connection::MAX_FETCH_BYTES;
use booblik_client::{Client, ConnectionConfig, ConsumerConfig, StartPosition, TopicName};
use booblik_protocol::{FetchRequest, RecordScanner, RecordSet};
use serde::Serialize;
use tokio::time::Instant;

use crate::baseline::Baseline;
use crate::broker_host::{BrokerHost, BrokerSpec};
use crate::cpu;
use crate::harness::Harness;
use crate::log_probe;

/// Topic of the fetch workload.
const TOPIC: &str = "fetch";
/// Payload bytes of the preloaded records.
const RECORD_BYTES: usize = 1024;
/// Records per preload batch.
const PRELOAD_BATCH_RECORDS: usize = 1000;
/// Preload requests in flight.
const PRELOAD_IN_FLIGHT: usize = 8;
/// Bytes in a GiB, for the CPU figures.
const GIB: f64 = (1u64 << 30) as f64;
/// Longest a single reading pass may take.
const PASS_LIMIT: Duration = Duration::from_mins(5);

/// How much to read.
#[derive(Debug, Clone, Copy)]
pub struct FetchConfig {
    /// MiB of records in the partition.
    pub data_mib: u64,
    /// Full reads of the partition per reader, mode and round.
    pub passes: u32,
    /// Rounds of (zero-copy, heap).
    pub rounds: u32,
}

/// Which reader fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Reader {
    /// Raw FETCH, records counted, CRC not checked.
    Raw,
    /// The client's consumer, every CRC verified.
    Consumer,
}

/// What one (mode, reader) pair measured.
#[derive(Debug, Clone, Serialize)]
pub struct FetchRun {
    /// `zero-copy` or `heap`.
    pub mode: &'static str,
    /// Which reader.
    pub reader: Reader,
    /// Log bytes received (record headers included).
    pub bytes: u64,
    /// FETCH requests sent.
    pub requests: u64,
    /// Seconds spent reading.
    pub seconds: f64,
    /// MB/s (10^6 bytes) of log bytes received, over all rounds.
    pub mb_s: f64,
    /// MB/s of the slowest round.
    pub mb_s_min: f64,
    /// MB/s of the fastest round.
    pub mb_s_max: f64,
    /// Raw loopback TCP MB/s measured at the start of every round (mean over rounds).
    pub adjacent_tcp_mb_s: f64,
    /// CPU seconds of the broker process per GiB sent.
    pub broker_cpu_s_per_gib: f64,
    /// CPU seconds of the client (this process) per GiB received.
    pub client_cpu_s_per_gib: f64,
    /// Ratios to the baseline of the same invocation.
    pub vs_baseline: FetchRatios,
}

/// Fetch figures relative to the machine's floor.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct FetchRatios {
    /// `mb_s / tcp_mb_s`: share of the baseline's raw loopback TCP throughput reached.
    pub mb_s_over_tcp_mb_s: f64,
    /// `mb_s / adjacent_tcp_mb_s`: share of the TCP throughput measured within the rounds.
    pub mb_s_over_adjacent_tcp_mb_s: f64,
}

/// One (mode, reader) measurement of one round.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    bytes: u64,
    requests: u64,
    seconds: f64,
    broker_cpu_s: f64,
    client_cpu_s: f64,
}

/// Runs both modes with both readers, `rounds` times. Needs its own child brokers (`--broker`
/// is ignored).
pub async fn run(harness: &Harness, config: FetchConfig) -> anyhow::Result<Vec<FetchRun>> {
    ensure!(
        config.passes > 0 && config.data_mib > 0 && config.rounds > 0,
        "nothing to read"
    );
    let scratch = tempfile::Builder::new()
        .prefix("booblik-load-fetch-")
        .tempdir_in(&harness.data_parent)
        .context("creating the fetch data directory")?;
    let modes = [FetchMode::ZeroCopy, FetchMode::Heap];
    let readers = [Reader::Raw, Reader::Consumer];
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); modes.len() * readers.len()];
    let mut adjacent_tcp = Vec::new();
    let tcp_bytes = (config.data_mib << 20) * u64::from(config.passes);
    for round in 0..config.rounds {
        adjacent_tcp.push(crate::baseline::throughput(tcp_bytes).await?);
        for (m, mode) in modes.into_iter().enumerate() {
            let spec = BrokerSpec {
                fetch_mode: mode,
                write_mode: harness.write_mode,
                ..BrokerSpec::with_topics(format!("{TOPIC}:1"))
            };
            let host = BrokerHost::start_child(&spec, scratch.path()).await?;
            let outcome = async {
                if round == 0 && m == 0 {
                    preload(&host, config.data_mib).await?;
                }
                let mut pair = Vec::new();
                for reader in readers {
                    pair.push(measure(&host, reader, config.passes).await?);
                }
                anyhow::Ok(pair)
            }
            .await;
            host.stop().await?;
            for (r, sample) in outcome?.into_iter().enumerate() {
                samples[m * readers.len() + r].push(sample);
            }
        }
    }
    let adjacent_tcp_mb_s = adjacent_tcp.iter().sum::<f64>() / adjacent_tcp.len() as f64;
    let mut runs = Vec::new();
    for (m, mode) in modes.into_iter().enumerate() {
        for (r, reader) in readers.into_iter().enumerate() {
            runs.push(summarise(
                mode,
                reader,
                &samples[m * readers.len() + r],
                &harness.baseline,
                adjacent_tcp_mb_s,
            ));
        }
    }
    Ok(runs) // `scratch` (the data directory) is removed here
}

fn summarise(
    mode: FetchMode,
    reader: Reader,
    samples: &[Sample],
    baseline: &Baseline,
    adjacent_tcp_mb_s: f64,
) -> FetchRun {
    let total = samples.iter().fold(Sample::default(), |a, s| Sample {
        bytes: a.bytes + s.bytes,
        requests: a.requests + s.requests,
        seconds: a.seconds + s.seconds,
        broker_cpu_s: a.broker_cpu_s + s.broker_cpu_s,
        client_cpu_s: a.client_cpu_s + s.client_cpu_s,
    });
    let rate = |s: &Sample| s.bytes as f64 / s.seconds / 1e6;
    let gib = total.bytes as f64 / GIB;
    let mb_s = rate(&total);
    FetchRun {
        mode: match mode {
            FetchMode::ZeroCopy => "zero-copy",
            FetchMode::Heap => "heap",
        },
        reader,
        bytes: total.bytes,
        requests: total.requests,
        seconds: total.seconds,
        mb_s,
        mb_s_min: samples.iter().map(rate).fold(f64::INFINITY, f64::min),
        mb_s_max: samples.iter().map(rate).fold(0.0, f64::max),
        adjacent_tcp_mb_s,
        broker_cpu_s_per_gib: total.broker_cpu_s / gib,
        client_cpu_s_per_gib: total.client_cpu_s / gib,
        vs_baseline: FetchRatios {
            mb_s_over_tcp_mb_s: mb_s / baseline.tcp_mb_s,
            mb_s_over_adjacent_tcp_mb_s: mb_s / adjacent_tcp_mb_s,
        },
    }
}

/// Fills the partition with `data_mib` of 1 KiB records, `ack = written`.
async fn preload(host: &BrokerHost, data_mib: u64) -> anyhow::Result<()> {
    let client = Client::connect(host.addr(), ConnectionConfig::default()).await?;
    let topic = TopicName::new(TOPIC)?;
    let payload = vec![0x5Au8; RECORD_BYTES];
    let batch = RecordSet::from_payloads(std::iter::repeat_n(&payload[..], PRELOAD_BATCH_RECORDS))?;
    let batches = (data_mib << 20).div_ceil(batch.log_bytes() as u64);
    let connection = client.open_connection().await?;
    let mut in_flight = std::collections::VecDeque::with_capacity(PRELOAD_IN_FLIGHT);
    for _ in 0..batches {
        if in_flight.len() == PRELOAD_IN_FLIGHT {
            let answer: booblik_client::ResponseFuture<_> =
                in_flight.pop_front().expect("the queue is full");
            answer.wait().await?;
        }
        in_flight.push_back(
            connection
                .submit_produce(&topic, 0, booblik_client::AckPolicy::Written, batch.clone())
                .await?,
        );
    }
    for answer in in_flight {
        answer.wait().await?;
    }
    let expected = (batches as i64) * PRELOAD_BATCH_RECORDS as i64;
    let in_log = log_probe::records_in_topic(&client, TOPIC).await?;
    ensure!(
        in_log == expected,
        "preloaded {in_log} records, expected {expected}"
    );
    Ok(())
}

async fn measure(host: &BrokerHost, reader: Reader, passes: u32) -> anyhow::Result<Sample> {
    let client = Client::connect(host.addr(), ConnectionConfig::default()).await?;
    let end = client
        .topic(TOPIC)
        .await?
        .high_watermark(0)
        .context("the fetch topic has partition 0")?;
    let broker_before = host
        .own_cpu_seconds()
        .context("the child broker's CPU time")?;
    let client_before = cpu::process_cpu_seconds();
    let started = Instant::now();
    let mut bytes = 0u64;
    let mut requests = 0u64;
    for _ in 0..passes {
        let pass = async {
            match reader {
                Reader::Raw => read_raw(&client, end).await,
                Reader::Consumer => read_with_consumer(&client, end).await,
            }
        };
        let (pass_bytes, pass_requests) = tokio::time::timeout(PASS_LIMIT, pass)
            .await
            .context("a fetch pass took too long")??;
        bytes += pass_bytes;
        requests += pass_requests;
    }
    let seconds = started.elapsed().as_secs_f64();
    let client_cpu_s = cpu::process_cpu_seconds() - client_before;
    let broker_cpu_s = host
        .own_cpu_seconds()
        .context("the child broker's CPU time")?
        - broker_before;
    Ok(Sample {
        bytes,
        requests,
        seconds,
        broker_cpu_s,
        client_cpu_s,
    })
}

/// Reads offsets `0..end` with raw FETCH v1, counting whole records. Returns (bytes, requests).
async fn read_raw(client: &Client, end: i64) -> anyhow::Result<(u64, u64)> {
    let connection = client.open_connection().await?;
    let topic = TopicName::new(TOPIC)?;
    let (mut offset, mut bytes, mut requests) = (0i64, 0u64, 0u64);
    while offset < end {
        let response = connection
            .fetch(FetchRequest {
                topic: topic.clone(),
                partition: 0,
                fetch_offset: offset,
                max_bytes: MAX_FETCH_BYTES,
                long_poll: None,
            })
            .await?;
        requests += 1;
        bytes += response.payload.len() as u64;
        let whole = RecordScanner::new(&response.payload).count();
        ensure!(whole > 0, "FETCH at {offset} returned no whole record");
        offset += whole as i64;
    }
    Ok((bytes, requests))
}

/// Reads offsets `0..end` with the client's consumer (CRC verified). Returns (bytes, requests).
async fn read_with_consumer(client: &Client, end: i64) -> anyhow::Result<(u64, u64)> {
    let mut consumer = client
        .consumer(
            TOPIC,
            0,
            StartPosition::At(0),
            ConsumerConfig {
                max_bytes: MAX_FETCH_BYTES,
                ..ConsumerConfig::default()
            },
        )
        .await?;
    let (mut bytes, mut requests) = (0u64, 0u64);
    while consumer.position() < end {
        let batch = consumer.fetch_batch(false).await?;
        requests += 1;
        ensure!(!batch.is_empty(), "FETCH returned no record before the end");
        bytes += batch
            .records
            .iter()
            .map(|r| booblik_protocol::record_bytes(r.payload.len()) as u64)
            .sum::<u64>();
    }
    Ok((bytes, requests))
}

/// The fetch results as a markdown table.
pub fn markdown(runs: &[&FetchRun], baseline: &Baseline) -> String {
    let mut out = String::from(
        "| mode | reader | GiB read | requests | MB/s | slowest round | fastest round | ÷ TCP baseline | ÷ adjacent TCP | broker CPU s/GiB | client CPU s/GiB |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for run in runs {
        let _ = writeln!(
            out,
            "| {} | {} | {:.2} | {} | {:.0} | {:.0} | {:.0} | {:.3} | {:.3} | {:.3} | {:.3} |",
            run.mode,
            match run.reader {
                Reader::Raw => "raw",
                Reader::Consumer => "consumer",
            },
            run.bytes as f64 / GIB,
            run.requests,
            run.mb_s,
            run.mb_s_min,
            run.mb_s_max,
            run.vs_baseline.mb_s_over_tcp_mb_s,
            run.vs_baseline.mb_s_over_adjacent_tcp_mb_s,
            run.broker_cpu_s_per_gib,
            run.client_cpu_s_per_gib,
        );
    }
    let adjacent = runs.first().map_or(f64::NAN, |r| r.adjacent_tcp_mb_s);
    let _ = writeln!(
        out,
        "\nTCP baseline: {:.0} MB/s one-way loopback at the start of the invocation; \
         {adjacent:.0} MB/s measured within the fetch rounds (adjacent).",
        baseline.tcp_mb_s
    );
    out
}
