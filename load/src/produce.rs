//! The produce workload: records/s and MB/s into the broker, per record size, ack policy, number
//! of producers and client path.
//!
//! Two client paths, because they answer different questions:
//!
//! * `producer` — the client's batching [`Producer`](booblik_client::Producer): one `send` per
//!   record, batched by the linger window and the batch size. What an application gets.
//! * `raw` — pre-built PRODUCE batches pipelined on a [`Connection`](booblik_client::Connection)
//!   (one reused `RecordSet`, so the client does almost nothing per record). What the broker
//!   and the wire can take; the gap between the two is the client's per-record cost.
//!
//! Each producer has its own connection and writes to its own partition (`i mod partitions`).
//! A run is bounded by time and by a record count. Throughput counts only records that are in
//! the log: after the last answer (or, with `ack = none`, once METADATA shows every record) the
//! topic must hold exactly the records sent, or the run fails.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::{Context, ensure};
use booblik_client::{Client, ConnectionConfig, ProducerConfig, TopicName};
use booblik_protocol::RecordSet;
use bytes::Bytes;
use serde::Serialize;
use tokio::time::Instant;

use crate::ack::Ack;
use crate::baseline::Baseline;
use crate::broker_host::{BrokerHost, BrokerSpec};
use crate::cpu;
use crate::harness::Harness;
use crate::log_probe;
use crate::report::figure;

/// Topic the produce workload writes to.
pub const TOPIC: &str = "bench";
/// Records-plus-size-fields per `raw` batch unless a record count is given (the `producer`
/// default batch is 1 MiB too).
const RAW_BATCH_BYTES: usize = 1024 * 1024;
/// Longest wait for `ack = none` records to appear in the log after the last write.
const LANDING_LIMIT: Duration = Duration::from_mins(1);
/// Producers check their deadline every this many records.
const DEADLINE_CHECK_EVERY: u64 = 256;

/// Which client path produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientPath {
    /// The batching `Producer`, one `send` per record.
    Producer,
    /// Pre-built batches pipelined on a connection.
    Raw,
}

/// One produce run.
#[derive(Debug, Clone, Copy)]
pub struct ProduceConfig {
    /// Payload bytes per record.
    pub record_bytes: usize,
    /// Ack policy.
    pub ack: Ack,
    /// Concurrent producers, each on its own connection and partition.
    pub producers: usize,
    /// Client path.
    pub client: ClientPath,
    /// Producer linger window (the `producer` path).
    pub linger_ms: u64,
    /// How long the producers send.
    pub duration_ms: u64,
    /// Upper bound on records per producer.
    pub max_records_per_producer: u64,
    /// Records per PRODUCE on the `raw` path; `None` fills [`RAW_BATCH_BYTES`].
    pub raw_records_per_batch: Option<usize>,
    /// PRODUCE requests a `raw` producer keeps in flight.
    pub raw_in_flight: usize,
}

/// What one produce run measured.
#[derive(Debug, Clone, Serialize)]
pub struct ProduceRun {
    /// Payload bytes per record.
    pub record_bytes: usize,
    /// Ack policy.
    pub ack: Ack,
    /// Concurrent producers.
    pub producers: usize,
    /// Client path.
    pub client: ClientPath,
    /// Linger window of the `producer` path (ms).
    pub linger_ms: u64,
    /// Records per PRODUCE of the `raw` path (`None` for the `producer` path).
    pub records_per_batch: Option<usize>,
    /// PRODUCE requests in flight per connection on the `raw` path (`None` for `producer`).
    pub in_flight: Option<usize>,
    /// Records sent and found in the log.
    pub records: u64,
    /// Seconds from the first send to the last record settled (or landed, for `none`).
    pub seconds: f64,
    /// Records per second.
    pub records_per_s: f64,
    /// Payload megabytes (10^6) per second.
    pub mb_s: f64,
    /// Bytes on the wire per second (payload + 4-byte size per record), MB/s.
    pub wire_mb_s: f64,
    /// CPU seconds of this process during the run (client and, if embedded, broker).
    pub process_cpu_s: f64,
    /// Where the broker ran.
    pub broker: &'static str,
    /// Segment rolls and seals during the run, over all partitions of the topic (embedded
    /// broker only: `None` for a child or external one).
    pub storage: Option<RollFigures>,
    /// Ratios to the baseline of the same invocation.
    pub vs_baseline: ProduceRatios,
}

/// What the run's segment rolls cost the producers: how long the longest roll held its
/// partition's appends, and how long the longest seal took (in MAPPED mode on a sealing thread
/// of its own, off the appends' path: `docs/storage.md` § Acknowledgements and durability).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct RollFigures {
    /// Segment rolls, all partitions.
    pub rolls: u64,
    /// The longest time a roll held its partition's appends, ms.
    pub longest_roll_ms: f64,
    /// Seals finished on a sealing thread, all partitions.
    pub seals: u64,
    /// The longest of those seals, ms.
    pub longest_seal_ms: f64,
}

impl RollFigures {
    fn of(stats: &[booblik_broker::storage::PartitionStats]) -> Self {
        let ms = |micros: u64| micros as f64 / 1_000.0;
        Self {
            rolls: stats.iter().map(|s| s.rolls).sum(),
            longest_roll_ms: ms(stats
                .iter()
                .map(|s| s.longest_roll_micros)
                .max()
                .unwrap_or(0)),
            seals: stats.iter().map(|s| s.seals).sum(),
            longest_seal_ms: ms(stats
                .iter()
                .map(|s| s.longest_seal_micros)
                .max()
                .unwrap_or(0)),
        }
    }
}

/// Produce figures relative to the machine's floor.
#[allow(clippy::struct_field_names)] // every ratio is of MB/s, and names end in their units
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ProduceRatios {
    /// `wire_mb_s / tcp_mb_s`: share of raw loopback TCP throughput used.
    pub wire_mb_s_over_tcp_mb_s: f64,
    /// `mb_s / page_cache_write_mb_s`: payload written as a share of what a plain `write` loop
    /// put into a new file's pages in the baseline (NaN if the probe was skipped).
    pub mb_s_over_page_cache_write_mb_s: f64,
    /// `wire_mb_s / tcp_store_mb_s`: share of what 4 loopback connections storing into new
    /// files moved in the baseline, back to back (NaN if the probe was skipped).
    pub wire_mb_s_over_tcp_store_mb_s: f64,
    /// `wire_mb_s / tcp_store_after_pause_mb_s`: the same, after a pause (NaN if skipped).
    pub wire_mb_s_over_tcp_store_after_pause_mb_s: f64,
}

/// Runs one produce configuration against a fresh broker (or `--broker`).
pub async fn run(harness: &Harness, config: ProduceConfig) -> anyhow::Result<ProduceRun> {
    ensure!(config.producers > 0, "at least one producer");
    ensure!(
        config.record_bytes > 0,
        "records must have at least one byte"
    );
    let spec = BrokerSpec::with_topics(format!("{TOPIC}:{}", config.producers));
    harness
        .with_broker(&spec, async |host| {
            measure(host, config, &harness.baseline).await
        })
        .await
}

async fn measure(
    host: &BrokerHost,
    config: ProduceConfig,
    baseline: &Baseline,
) -> anyhow::Result<ProduceRun> {
    let admin = Client::connect(host.addr(), ConnectionConfig::default()).await?;
    let partitions = admin.topic(TOPIC).await?.partition_count() as usize;
    let before = log_probe::records_in_topic(&admin, TOPIC).await?;
    let payload = Bytes::from(vec![0xA5u8; config.record_bytes]);

    let cpu_before = cpu::process_cpu_seconds();
    let started = Instant::now();
    let deadline = started + Duration::from_millis(config.duration_ms);
    let mut producers = Vec::with_capacity(config.producers);
    for index in 0..config.producers {
        let client = Client::connect(host.addr(), ConnectionConfig::default()).await?;
        let partition = (index % partitions) as i32;
        // A buffer of its own: `send` takes a `Bytes` per record, and clones of one shared
        // buffer would bounce its reference count between the cores on every record.
        let payload = Bytes::copy_from_slice(&payload);
        producers.push(tokio::spawn(async move {
            match config.client {
                ClientPath::Producer => {
                    produce_with_producer(client, partition, payload, config, deadline).await
                }
                ClientPath::Raw => produce_raw(client, partition, payload, config, deadline).await,
            }
        }));
    }
    let mut sent = 0u64;
    for producer in producers {
        sent += producer.await.context("a producer task failed")??;
    }
    let expected = before + sent as i64;
    if config.ack == Ack::None {
        log_probe::wait_for_records(&admin, TOPIC, expected, LANDING_LIMIT).await?;
    }
    let seconds = started.elapsed().as_secs_f64();
    let process_cpu_s = cpu::process_cpu_seconds() - cpu_before;
    let in_log = log_probe::records_in_topic(&admin, TOPIC).await?;
    ensure!(
        in_log == expected,
        "{TOPIC} holds {in_log} records, expected {expected} ({sent} sent by this run)"
    );

    // A fresh broker per run: its counters are this run's.
    let storage = host
        .partition_stats(TOPIC)
        .map(|stats| RollFigures::of(&stats));
    let records_per_s = sent as f64 / seconds;
    let mb_s = records_per_s * config.record_bytes as f64 / 1e6;
    let wire_mb_s = records_per_s * (config.record_bytes + 4) as f64 / 1e6;
    Ok(ProduceRun {
        record_bytes: config.record_bytes,
        ack: config.ack,
        producers: config.producers,
        client: config.client,
        linger_ms: config.linger_ms,
        records_per_batch: (config.client == ClientPath::Raw)
            .then(|| raw_records_per_batch(&config)),
        in_flight: (config.client == ClientPath::Raw).then_some(config.raw_in_flight),
        records: sent,
        seconds,
        records_per_s,
        mb_s,
        wire_mb_s,
        process_cpu_s,
        broker: if host.is_fresh() {
            "embedded"
        } else {
            "external"
        },
        storage,
        vs_baseline: ProduceRatios {
            wire_mb_s_over_tcp_mb_s: wire_mb_s / baseline.tcp_mb_s,
            mb_s_over_page_cache_write_mb_s: mb_s / baseline.page_cache_write_mb_s,
            wire_mb_s_over_tcp_store_mb_s: wire_mb_s / baseline.tcp_store_mb_s,
            wire_mb_s_over_tcp_store_after_pause_mb_s: wire_mb_s
                / baseline.tcp_store_after_pause_mb_s,
        },
    })
}

/// One `send` per record through the batching producer; flushes at the end. Returns the number
/// of records sent (all settled when it returns).
async fn produce_with_producer(
    client: Client,
    partition: i32,
    payload: Bytes,
    config: ProduceConfig,
    deadline: Instant,
) -> anyhow::Result<u64> {
    let producer = client
        .producer(
            TOPIC,
            ProducerConfig {
                ack: config.ack.policy(),
                linger_ms: config.linger_ms,
                ..ProducerConfig::default()
            },
        )
        .await?;
    let mut sent = 0u64;
    // The deliveries are not awaited one by one (that would measure the await, not the
    // producer); the count in the log is checked after the flush instead.
    while sent < config.max_records_per_producer {
        producer.send_to(partition, payload.clone()).await?;
        sent += 1;
        if sent.is_multiple_of(DEADLINE_CHECK_EVERY) && Instant::now() >= deadline {
            break;
        }
    }
    producer.flush().await?;
    Ok(sent)
}

/// Records per `raw` PRODUCE: as given, or as many as fill [`RAW_BATCH_BYTES`].
fn raw_records_per_batch(config: &ProduceConfig) -> usize {
    config
        .raw_records_per_batch
        .unwrap_or((RAW_BATCH_BYTES / (config.record_bytes + 4)).max(1))
}

/// The same pre-built batch again and again, `raw_in_flight` requests pipelined. Returns the
/// number of records sent (all answered, or written for `ack = none`, when it returns).
async fn produce_raw(
    client: Client,
    partition: i32,
    payload: Bytes,
    config: ProduceConfig,
    deadline: Instant,
) -> anyhow::Result<u64> {
    let topic = TopicName::new(TOPIC)?;
    let per_batch = raw_records_per_batch(&config);
    let batch = RecordSet::from_payloads(std::iter::repeat_n(&payload[..], per_batch))?;
    let connection = client.open_connection().await?;
    let mut in_flight = std::collections::VecDeque::with_capacity(config.raw_in_flight);
    let mut sent = 0u64;
    while sent < config.max_records_per_producer && Instant::now() < deadline {
        if in_flight.len() == config.raw_in_flight {
            let answer: booblik_client::ResponseFuture<_> =
                in_flight.pop_front().expect("the queue is full");
            answer.wait().await?;
        }
        let answer = connection
            .submit_produce(&topic, partition, config.ack.policy(), batch.clone())
            .await?;
        in_flight.push_back(answer);
        sent += per_batch as u64;
    }
    for answer in in_flight {
        answer.wait().await?;
    }
    Ok(sent)
}

/// The table's rolls cell: `rolls: longest hold / longest seal` in ms; the seal is `—` when none
/// finished on a sealing thread by the end of the run (FILE mode seals inside the roll, and a
/// MAPPED seal may still be running); `—` alone for a broker whose counters the harness cannot
/// read, `0` for no roll.
fn rolls_cell(storage: Option<RollFigures>) -> String {
    match storage {
        None => "—".to_owned(),
        Some(rolls) if rolls.rolls == 0 => "0".to_owned(),
        Some(rolls) => {
            let seal = if rolls.seals == 0 {
                "—".to_owned()
            } else {
                format!("{:.1}", rolls.longest_seal_ms)
            };
            format!("{}: {:.1} / {seal}", rolls.rolls, rolls.longest_roll_ms)
        }
    }
}

/// The produce results as a markdown table.
pub fn markdown(runs: &[&ProduceRun], baseline: &Baseline) -> String {
    let mut out = String::from(
        "| client | record B | ack | producers | batch × in flight | records | records/s | MB/s (payload) | wire MB/s | ÷ TCP baseline | ÷ TCP into the page cache, after a pause / back to back | payload ÷ page-cache write | CPU s | rolls: longest hold / longest seal, ms |\n\
         |---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for run in runs {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {:.0} | {:.1} | {:.1} | {:.3} | {} / {} | {:.3} | {:.2} | {} |",
            match run.client {
                ClientPath::Producer => "producer",
                ClientPath::Raw => "raw",
            },
            run.record_bytes,
            run.ack.name(),
            run.producers,
            match (run.records_per_batch, run.in_flight) {
                (Some(batch), Some(in_flight)) => format!("{batch} × {in_flight}"),
                _ => "—".to_owned(),
            },
            run.records,
            run.records_per_s,
            run.mb_s,
            run.wire_mb_s,
            run.vs_baseline.wire_mb_s_over_tcp_mb_s,
            figure(run.vs_baseline.wire_mb_s_over_tcp_store_after_pause_mb_s, 3),
            figure(run.vs_baseline.wire_mb_s_over_tcp_store_mb_s, 3),
            run.vs_baseline.mb_s_over_page_cache_write_mb_s,
            run.process_cpu_s,
            rolls_cell(run.storage),
        );
    }
    let _ = write!(
        out,
        "\nTCP baseline: {:.0} MB/s one-way loopback (median of {} transfers). Page-cache \
         write: {:.0} MB/s into a new file's pages (a plain `write` loop, no fsync: the ceiling \
         of any broker writing new data on this machine at that moment).",
        baseline.tcp_mb_s,
        crate::baseline::TCP_THROUGHPUT_TRIALS,
        baseline.page_cache_write_mb_s,
    );
    if baseline.tcp_store_mb_s.is_finite() {
        let _ = write!(
            out,
            " TCP into the page cache: {} MB/s after {} ms idle, {:.0} MB/s back to back (median \
             of {}), over {} loopback connections whose receivers store what they read into new \
             reserved files (no framing, checksum or acknowledgement: the least a broker does \
             with a produced byte; after a pause, the VM's host may have taken freed memory \
             back).",
            figure(baseline.tcp_store_after_pause_mb_s, 0),
            baseline.tcp_store_pause_ms,
            baseline.tcp_store_mb_s,
            crate::baseline::TCP_THROUGHPUT_TRIALS,
            crate::baseline::TCP_STORE_CONNECTIONS,
        );
    } else {
        out.push_str(" TCP into the page cache: not measured (`--baseline-tcp-store-mib 0`).");
    }
    out.push_str(
        " Rolls: segment rolls during the run (embedded broker only), the longest time one held \
         its partition's appends, and the longest seal of a full segment, which MAPPED mode runs \
         on a thread of its own (\"—\": no seal finished on that thread by the end of the run; \
         FILE mode seals inside the roll).",
    );
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::{RollFigures, rolls_cell};

    #[test]
    fn the_rolls_cell_shows_the_longest_hold_and_seal_or_says_what_is_missing() {
        let rolls = |rolls, hold, seals, seal| {
            Some(RollFigures {
                rolls,
                longest_roll_ms: hold,
                seals,
                longest_seal_ms: seal,
            })
        };
        assert_eq!(rolls_cell(None), "—", "a broker the harness cannot read");
        assert_eq!(rolls_cell(rolls(0, 0.0, 0, 0.0)), "0");
        assert_eq!(rolls_cell(rolls(4, 1.94, 4, 325.46)), "4: 1.9 / 325.5");
        assert_eq!(
            rolls_cell(rolls(4, 189.6, 0, 0.0)),
            "4: 189.6 / —",
            "FILE mode seals inside the roll, or a MAPPED seal still running"
        );
    }
}
