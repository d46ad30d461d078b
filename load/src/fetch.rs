//! The fetch workload: FETCH throughput and CPU per GiB, zero-copy (`sendfile`) against heap
//! (read into a buffer, then write).
//!
//! Method. The broker runs as a **child process** so its CPU time can be read on its own from
//! `/proc/<pid>/stat`; the client's is this process's `getrusage`. A child broker in zero-copy
//! mode is started over a fresh data directory and filled with `data_mib` of 1 KiB records
//! (these writes are not measured); then the partition is read from the start to the end,
//! `passes` times, by each reader; then the child is stopped and a heap-mode child is started over
//! the same directory (the data is in the page cache for both) and read the same way.
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
    /// Full reads of the partition per reader and mode.
    pub passes: u32,
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
    /// MB/s (10^6 bytes) of log bytes received.
    pub mb_s: f64,
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
    /// `mb_s / tcp_mb_s`: share of raw loopback TCP throughput reached.
    pub mb_s_over_tcp_mb_s: f64,
}

/// Runs both modes with both readers. Needs its own child brokers (`--broker` is ignored).
pub async fn run(harness: &Harness, config: FetchConfig) -> anyhow::Result<Vec<FetchRun>> {
    ensure!(config.passes > 0 && config.data_mib > 0, "nothing to read");
    let scratch = tempfile::Builder::new()
        .prefix("booblik-load-fetch-")
        .tempdir_in(&harness.data_parent)
        .context("creating the fetch data directory")?;
    let mut runs = Vec::new();
    for (index, mode) in [FetchMode::ZeroCopy, FetchMode::Heap]
        .into_iter()
        .enumerate()
    {
        let spec = BrokerSpec {
            fetch_mode: mode,
            ..BrokerSpec::with_topics(format!("{TOPIC}:1"))
        };
        let host = BrokerHost::start_child(&spec, scratch.path()).await?;
        let outcome = async {
            if index == 0 {
                preload(&host, config.data_mib).await?;
            }
            let mut pair = Vec::new();
            for reader in [Reader::Raw, Reader::Consumer] {
                pair.push(measure(&host, mode, reader, config, &harness.baseline).await?);
            }
            anyhow::Ok(pair)
        }
        .await;
        host.stop().await?;
        runs.extend(outcome?);
    }
    Ok(runs) // `scratch` (the data directory) is removed here
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

async fn measure(
    host: &BrokerHost,
    mode: FetchMode,
    reader: Reader,
    config: FetchConfig,
    baseline: &Baseline,
) -> anyhow::Result<FetchRun> {
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
    for _ in 0..config.passes {
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
    let client_cpu = cpu::process_cpu_seconds() - client_before;
    let broker_cpu = host
        .own_cpu_seconds()
        .context("the child broker's CPU time")?
        - broker_before;
    let gib = bytes as f64 / GIB;
    let mb_s = bytes as f64 / seconds / 1e6;
    Ok(FetchRun {
        mode: match mode {
            FetchMode::ZeroCopy => "zero-copy",
            FetchMode::Heap => "heap",
        },
        reader,
        bytes,
        requests,
        seconds,
        mb_s,
        broker_cpu_s_per_gib: broker_cpu / gib,
        client_cpu_s_per_gib: client_cpu / gib,
        vs_baseline: FetchRatios {
            mb_s_over_tcp_mb_s: mb_s / baseline.tcp_mb_s,
        },
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
        "| mode | reader | GiB read | requests | MB/s | ÷ TCP baseline | broker CPU s/GiB | client CPU s/GiB |\n\
         |---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for run in runs {
        let _ = writeln!(
            out,
            "| {} | {} | {:.2} | {} | {:.0} | {:.3} | {:.3} | {:.3} |",
            run.mode,
            match run.reader {
                Reader::Raw => "raw",
                Reader::Consumer => "consumer",
            },
            run.bytes as f64 / GIB,
            run.requests,
            run.mb_s,
            run.vs_baseline.mb_s_over_tcp_mb_s,
            run.broker_cpu_s_per_gib,
            run.client_cpu_s_per_gib,
        );
    }
    let _ = writeln!(
        out,
        "\nTCP baseline: {:.0} MB/s one-way loopback.",
        baseline.tcp_mb_s
    );
    out
}
