//! Request round trips, one at a time, to split a latency into its parts.
//!
//! A claim's latency (and a produce → follow latency) is a PRODUCE round trip plus the wake-up
//! of a long poll. Timing the three request kinds alone, on one connection with one request in
//! flight, separates the costs:
//!
//! * **METADATA** — the protocol, the session task and the client's connection tasks, with no
//!   storage involved: the floor of any request;
//! * **FETCH** (v1, at the log end: an empty answer) — the same plus a look at the partition;
//! * **PRODUCE** (one 100-byte record, `ack = written`) — the same plus the hand-off to the
//!   partition's writer thread and back;
//! * **PRODUCE after idle** — the same after a pause of 2 ms, so that the threads involved
//!   sleep before each request (the control for the next one);
//! * **PRODUCE → long poll** — a follower's FETCH v2 waiting at the log end, and the time from
//!   sending a one-record PRODUCE (after the same pause) to that follower holding the record.
//!
//! Each is compared with the loopback round trip of the baseline.

use std::time::Duration;

use anyhow::{Context, ensure};
use booblik_client::{
    AckPolicy, Client, ConnectionConfig, ConsumerConfig, StartPosition, TopicName,
};
use booblik_protocol::{FetchRequest, RecordSet};
use serde::Serialize;
use tokio::time::Instant;

use crate::baseline::Baseline;
use crate::broker_host::{BrokerHost, BrokerSpec};
use crate::harness::Harness;
use crate::latency::{LatencyRecorder, Percentiles};

/// Topic of the probe.
const TOPIC: &str = "probe";
/// Requests of each kind timed (after a tenth as many as warm-up).
const REQUESTS: u32 = 2_000;
/// PRODUCE → long poll samples (each waits [`LONG_POLL_PARK`] first).
const LONG_POLL_REQUESTS: u32 = 500;
/// Pause before each PRODUCE of the long-poll probe, so the follower's FETCH is parked at the
/// broker and the PRODUCE has to wake it.
const LONG_POLL_PARK: Duration = Duration::from_millis(2);
/// Payload of the probe's records.
const RECORD_BYTES: usize = 100;
/// Longest wait for one request.
const REQUEST_LIMIT: Duration = Duration::from_secs(10);

/// One kind of request, timed.
#[derive(Debug, Clone, Serialize)]
pub struct RequestKind {
    /// `metadata`, `fetch`, `produce`, `metadata_after_idle`, `produce_after_idle` or
    /// `produce_to_long_poll`.
    pub request: &'static str,
    /// Requests timed.
    pub count: u64,
    /// Round trip, µs.
    pub latency_us: Percentiles,
    /// `p50 / loopback RTT p50`.
    pub p50_over_rtt_p50: f64,
}

/// What the probe measured.
#[derive(Debug, Clone, Serialize)]
pub struct RequestsRun {
    /// One entry per request kind.
    pub kinds: Vec<RequestKind>,
}

/// Runs the probe against a fresh broker (or `--broker`, which needs a `probe` topic).
pub async fn run(harness: &Harness) -> anyhow::Result<RequestsRun> {
    let spec = BrokerSpec::with_topics(format!("{TOPIC}:1"));
    harness
        .with_broker(&spec, async |host| measure(host, &harness.baseline).await)
        .await
}

async fn measure(host: &BrokerHost, baseline: &Baseline) -> anyhow::Result<RequestsRun> {
    let client = Client::connect(host.addr(), ConnectionConfig::default()).await?;
    let connection = client.open_connection().await?;
    let topic = TopicName::new(TOPIC)?;
    let records = RecordSet::from_payloads([vec![0x42u8; RECORD_BYTES]])?;
    let total = REQUESTS + REQUESTS / 10;

    let mut metadata = LatencyRecorder::new();
    for i in 0..total {
        let started = Instant::now();
        connection.metadata(std::slice::from_ref(&topic)).await?;
        if i >= REQUESTS / 10 {
            metadata.record(started.elapsed());
        }
    }

    let mut produce = LatencyRecorder::new();
    let mut end = 0i64;
    for i in 0..total {
        let started = Instant::now();
        let answer = connection
            .produce(&topic, 0, AckPolicy::Written, records.clone())
            .await?
            .context("an acknowledged PRODUCE has an answer")?;
        if i >= REQUESTS / 10 {
            produce.record(started.elapsed());
        }
        end = answer.log_end_offset;
    }

    // The same pause before a request that never reaches a writer thread: the difference to
    // `produce_after_idle` is what the hop to the partition's writer costs on a quiet machine.
    let mut metadata_after_idle = LatencyRecorder::new();
    for i in 0..LONG_POLL_REQUESTS + LONG_POLL_REQUESTS / 10 {
        tokio::time::sleep(LONG_POLL_PARK).await;
        let started = Instant::now();
        connection.metadata(std::slice::from_ref(&topic)).await?;
        if i >= LONG_POLL_REQUESTS / 10 {
            metadata_after_idle.record(started.elapsed());
        }
    }

    let mut produce_after_idle = LatencyRecorder::new();
    for i in 0..LONG_POLL_REQUESTS + LONG_POLL_REQUESTS / 10 {
        tokio::time::sleep(LONG_POLL_PARK).await;
        let started = Instant::now();
        let answer = connection
            .produce(&topic, 0, AckPolicy::Written, records.clone())
            .await?
            .context("an acknowledged PRODUCE has an answer")?;
        if i >= LONG_POLL_REQUESTS / 10 {
            produce_after_idle.record(started.elapsed());
        }
        end = answer.log_end_offset;
    }

    let mut fetch = LatencyRecorder::new();
    for i in 0..total {
        let started = Instant::now();
        let answer = connection
            .fetch(FetchRequest {
                topic: topic.clone(),
                partition: 0,
                fetch_offset: end,
                max_bytes: 1024,
                long_poll: None,
            })
            .await?;
        ensure!(
            answer.payload.is_empty(),
            "FETCH at the log end returned bytes"
        );
        if i >= REQUESTS / 10 {
            fetch.record(started.elapsed());
        }
    }

    // A follower long-polls at the end; each PRODUCE, sent once the poll is parked at the
    // broker, must wake it.
    let follow = client
        .consumer(TOPIC, 0, StartPosition::At(end), ConsumerConfig::default())
        .await?
        .follow();
    let (arrived_tx, mut arrived) = tokio::sync::mpsc::unbounded_channel();
    let follower = tokio::spawn(async move {
        let mut follow = follow;
        loop {
            let batch = follow.next_batch().await?;
            let at = Instant::now();
            for _ in &batch.records {
                if arrived_tx.send(at).is_err() {
                    return anyhow::Ok(());
                }
            }
        }
    });
    let mut to_long_poll = LatencyRecorder::new();
    let long_poll_total = LONG_POLL_REQUESTS + LONG_POLL_REQUESTS / 10;
    for i in 0..long_poll_total {
        tokio::time::sleep(LONG_POLL_PARK).await;
        let started = Instant::now();
        connection
            .produce(&topic, 0, AckPolicy::Written, records.clone())
            .await?;
        let at = tokio::time::timeout(REQUEST_LIMIT, arrived.recv())
            .await
            .context("a PRODUCE did not reach the follower in time")?
            .context("the follower stopped")?;
        if i >= LONG_POLL_REQUESTS / 10 {
            to_long_poll.record(at.saturating_duration_since(started));
        }
    }
    follower.abort();

    let kind = |request, latency: &LatencyRecorder| {
        let latency_us = latency.percentiles();
        RequestKind {
            request,
            count: latency.count(),
            latency_us,
            p50_over_rtt_p50: latency_us.p50 / baseline.rtt_us_p50,
        }
    };
    Ok(RequestsRun {
        kinds: vec![
            kind("metadata", &metadata),
            kind("fetch", &fetch),
            kind("produce", &produce),
            kind("metadata_after_idle", &metadata_after_idle),
            kind("produce_after_idle", &produce_after_idle),
            kind("produce_to_long_poll", &to_long_poll),
        ],
    })
}

/// The probe as a markdown table.
pub fn markdown(run: &RequestsRun, baseline: &Baseline) -> String {
    use std::fmt::Write as _;
    let mut out = String::from(
        "One request in flight on one connection (PRODUCE: one 100 B record, ack = written; \
         FETCH v1 at the log end; produce_to_long_poll: PRODUCE sent → a waiting follower holds the record):\n\n\
         | request | count | p50 µs | p90 µs | p99 µs | p99.9 µs | max µs | p50 ÷ RTT |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for k in &run.kinds {
        let l = k.latency_us;
        let _ = writeln!(
            out,
            "| {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.1} |",
            k.request, k.count, l.p50, l.p90, l.p99, l.p999, l.max, k.p50_over_rtt_p50
        );
    }
    let _ = writeln!(
        out,
        "\nLoopback RTT p50 (baseline): {:.1} µs.",
        baseline.rtt_us_p50
    );
    out
}
