//! The end-to-end workload: how long a record takes from `send` on a producer to a follower
//! holding it, at a steady rate.
//!
//! Every record carries the time of its `send` (nanoseconds since a monotonic epoch shared by
//! the producer and the follower, which run in this process); the follower subtracts it from
//! its own reading when the record arrives. The latency therefore includes the producer's linger
//! window, the PRODUCE, the write into the log, the wake-up of the follower's long poll, the
//! FETCH answer and the CRC check — everything an application would see.
//!
//! The rate is paced in 1 ms ticks (`rate / 1000` records per tick), so bursts are at most one
//! tick's worth. The follower starts at the log end before the first send.
//!
//! Two client paths, as in the produce workload: the batching `producer` (linger window and
//! all), and `raw` — one PRODUCE per record on a connection, pipelined — which is what the task
//! queue's claims do and isolates the broker's part. Beside the follow latency, each run reports
//! the **ack latency** (send → the broker's answer) with `ack = written`.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::{Context, ensure};
use booblik_client::{
    AckPolicy, Client, ConnectionConfig, ConsumerConfig, Delivery, ProducerConfig, StartPosition,
    TopicName,
};
use booblik_protocol::RecordSet;
use serde::Serialize;
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, MissedTickBehavior};

use crate::baseline::Baseline;
use crate::broker_host::{BrokerHost, BrokerSpec};
use crate::harness::Harness;
use crate::latency::{LatencyRecorder, Percentiles};
use crate::produce::ClientPath;

/// Topic of the e2e workload.
const TOPIC: &str = "e2e";
/// Pacing tick.
const TICK: Duration = Duration::from_millis(1);
/// Bytes of the timestamp at the start of every payload.
const STAMP_BYTES: usize = 8;
/// Longest the follower may lag behind the last send before the run fails.
const DRAIN_LIMIT: Duration = Duration::from_secs(30);

/// One e2e run.
#[derive(Debug, Clone, Copy)]
pub struct E2eConfig {
    /// Records per second.
    pub rate_per_s: u64,
    /// Producer linger window.
    pub linger_ms: u64,
    /// How long to send.
    pub duration_ms: u64,
    /// Payload bytes per record (at least 8).
    pub record_bytes: usize,
    /// Client path.
    pub client: ClientPath,
}

/// What one e2e run measured.
#[derive(Debug, Clone, Serialize)]
pub struct E2eRun {
    /// Client path.
    pub client: ClientPath,
    /// Records per second asked for.
    pub rate_per_s: u64,
    /// Producer linger window (ms).
    pub linger_ms: u64,
    /// Payload bytes per record.
    pub record_bytes: usize,
    /// Records sent and received.
    pub records: u64,
    /// Send → follower latency, µs.
    pub latency_us: Percentiles,
    /// Send → broker's answer (`ack = written`), µs.
    pub ack_latency_us: Percentiles,
    /// Ratios to the baseline of the same invocation.
    pub vs_baseline: E2eRatios,
}

/// E2e figures relative to the machine's floor.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct E2eRatios {
    /// `latency p50 / loopback RTT p50`.
    pub p50_over_rtt_p50: f64,
    /// `latency p99 / loopback RTT p50`.
    pub p99_over_rtt_p50: f64,
}

/// Runs one e2e configuration against a fresh broker (or `--broker`).
pub async fn run(harness: &Harness, config: E2eConfig) -> anyhow::Result<E2eRun> {
    ensure!(
        config.record_bytes >= STAMP_BYTES,
        "records carry an 8-byte timestamp"
    );
    ensure!(config.rate_per_s > 0, "the rate must be positive");
    let spec = BrokerSpec::with_topics(format!("{TOPIC}:1"));
    harness
        .with_broker(&spec, async |host| {
            measure(host, config, &harness.baseline).await
        })
        .await
}

async fn measure(
    host: &BrokerHost,
    config: E2eConfig,
    baseline: &Baseline,
) -> anyhow::Result<E2eRun> {
    let client = Client::connect(host.addr(), ConnectionConfig::default()).await?;
    let start = client
        .topic(TOPIC)
        .await?
        .high_watermark(0)
        .context("partition 0")?;
    let consumer = client
        .consumer(
            TOPIC,
            0,
            StartPosition::At(start),
            ConsumerConfig::default(),
        )
        .await?;
    let epoch = Instant::now();
    let (sent_tx, sent_rx) = watch::channel(None::<u64>);
    let follower = tokio::spawn(follow(consumer, epoch, sent_rx));

    let (acks_tx, acks_rx) = mpsc::unbounded_channel();
    let acks = tokio::spawn(collect_acks(acks_rx));
    let mut sender = Sender::start(&client, config).await?;
    let mut payload = vec![0u8; config.record_bytes];
    let mut ticker = tokio::time::interval(TICK);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Burst);
    let deadline = Instant::now() + Duration::from_millis(config.duration_ms);
    let mut due = 0f64;
    let mut sent = 0u64;
    let per_tick = config.rate_per_s as f64 * TICK.as_secs_f64();
    while Instant::now() < deadline {
        ticker.tick().await;
        due += per_tick;
        while due >= 1.0 {
            due -= 1.0;
            let stamp = u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
            payload[..STAMP_BYTES].copy_from_slice(&stamp.to_be_bytes());
            let pending = sender.send(&payload).await?;
            if acks_tx.send((Instant::now(), pending)).is_err() {
                anyhow::bail!("the ack collector stopped");
            }
            sent += 1;
        }
    }
    sender.flush().await?;
    drop(acks_tx);
    let ack_latency = acks.await.context("the ack collector panicked")??;
    drop(sender); // only now: a raw connection dropped earlier would fail its pending answers
    sent_tx.send_replace(Some(sent));
    let latency = tokio::time::timeout(DRAIN_LIMIT, follower)
        .await
        .context("the follower did not receive every record in time")?
        .context("the follower task failed")??;
    ensure!(
        latency.count() == sent,
        "the follower received {} of {sent} records",
        latency.count()
    );
    let latency_us = latency.percentiles();
    Ok(E2eRun {
        client: config.client,
        ack_latency_us: ack_latency.percentiles(),
        rate_per_s: config.rate_per_s,
        linger_ms: config.linger_ms,
        record_bytes: config.record_bytes,
        records: sent,
        latency_us,
        vs_baseline: E2eRatios {
            p50_over_rtt_p50: latency_us.p50 / baseline.rtt_us_p50,
            p99_over_rtt_p50: latency_us.p99 / baseline.rtt_us_p50,
        },
    })
}

/// An answer on its way: a producer's delivery or a raw PRODUCE's response.
enum Pending {
    Delivery(Delivery),
    Raw(booblik_client::ResponseFuture<Option<booblik_protocol::ProduceResponse>>),
}

/// Sends one record at a time through the chosen client path.
enum Sender {
    Producer(booblik_client::Producer),
    Raw {
        connection: booblik_client::Connection,
        topic: TopicName,
    },
}

impl Sender {
    async fn start(client: &Client, config: E2eConfig) -> anyhow::Result<Self> {
        Ok(match config.client {
            ClientPath::Producer => Sender::Producer(
                client
                    .producer(
                        TOPIC,
                        ProducerConfig {
                            linger_ms: config.linger_ms,
                            ..ProducerConfig::default()
                        },
                    )
                    .await?,
            ),
            ClientPath::Raw => Sender::Raw {
                connection: client.open_connection().await?,
                topic: TopicName::new(TOPIC)?,
            },
        })
    }

    async fn send(&mut self, payload: &[u8]) -> anyhow::Result<Pending> {
        Ok(match self {
            Sender::Producer(producer) => {
                Pending::Delivery(producer.send_to(0, payload.to_vec()).await?)
            }
            Sender::Raw { connection, topic } => Pending::Raw(
                connection
                    .submit_produce(
                        topic,
                        0,
                        AckPolicy::Written,
                        RecordSet::from_payloads([payload])?,
                    )
                    .await?,
            ),
        })
    }

    async fn flush(&self) -> anyhow::Result<()> {
        if let Sender::Producer(producer) = self {
            producer.flush().await?;
        }
        Ok(())
    }
}

/// Awaits every answer in send order and records send → answer.
async fn collect_acks(
    mut pending: mpsc::UnboundedReceiver<(Instant, Pending)>,
) -> anyhow::Result<LatencyRecorder> {
    let mut latency = LatencyRecorder::new();
    while let Some((sent_at, answer)) = pending.recv().await {
        match answer {
            Pending::Delivery(delivery) => {
                delivery.await?;
            }
            Pending::Raw(response) => {
                response.wait().await?;
            }
        }
        latency.record(sent_at.elapsed());
    }
    Ok(latency)
}

/// Follows until it has received as many records as the producer reports it sent.
async fn follow(
    consumer: booblik_client::Consumer,
    epoch: Instant,
    mut sent: watch::Receiver<Option<u64>>,
) -> anyhow::Result<LatencyRecorder> {
    let mut latency = LatencyRecorder::new();
    let mut follow = consumer.follow();
    loop {
        if let Some(total) = *sent.borrow_and_update()
            && latency.count() >= total
        {
            return Ok(latency);
        }
        tokio::select! {
            batch = follow.next_batch() => {
                let batch = batch?;
                let now = epoch.elapsed();
                for record in &batch.records {
                    let stamp = record
                        .payload
                        .first_chunk::<STAMP_BYTES>()
                        .map(|b| u64::from_be_bytes(*b))
                        .context("a record without its timestamp")?;
                    latency.record(now.saturating_sub(Duration::from_nanos(stamp)));
                }
            }
            changed = sent.changed() => changed.context("the producer side went away")?,
        }
    }
}

/// The e2e results as a markdown table.
pub fn markdown(runs: &[&E2eRun], baseline: &Baseline) -> String {
    let mut out = String::from(
        "| client | rate/s | linger ms | records | p50 µs | p90 µs | p99 µs | p99.9 µs | max µs | p50 ÷ RTT | p99 ÷ RTT | ack p50 µs | ack p99 µs |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for run in runs {
        let l = run.latency_us;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.1} | {:.1} | {:.0} | {:.0} |",
            match run.client {
                ClientPath::Producer => "producer",
                ClientPath::Raw => "raw",
            },
            run.rate_per_s,
            run.linger_ms,
            run.records,
            l.p50,
            l.p90,
            l.p99,
            l.p999,
            l.max,
            run.vs_baseline.p50_over_rtt_p50,
            run.vs_baseline.p99_over_rtt_p50,
            run.ack_latency_us.p50,
            run.ack_latency_us.p99,
        );
    }
    let _ = writeln!(
        out,
        "\nLoopback RTT p50 (baseline): {:.1} µs. The raw path sends one PRODUCE per record (no linger).",
        baseline.rtt_us_p50
    );
    out
}
