//! The soak: a bounded run of mixed produce, follow and fetch, with consumer restarts and broker
//! restarts, checked end to end.
//!
//! What runs at once, for `duration_s`:
//! * one producer per partition ([`producer`]): identified records at a steady rate,
//!   `ack = written`, every delivery checked;
//! * followers ([`follower`]): `follow()` from offset 0, restarting at random, resuming at their
//!   saved position or behind it;
//! * replayers ([`replayer`]): `replay()` (FETCH v1) of random ranges;
//! * graceful broker restarts at even intervals (embedded broker only).
//!
//! What must hold, checked by the [`ledger`] and the readers:
//! * within one continuous read, offsets are consecutive (no gap, no duplicate), and a restart at
//!   the saved position continues exactly there;
//! * a record read twice is the same record; a record read where an acknowledgement placed it is
//!   that record; one producer's acknowledged offsets rise with its sequence;
//! * at the end, every follower has read every offset below the log end, so every acknowledged
//!   record was found; no record appears at two offsets.
//!
//! Any violation makes the command exit non-zero, after printing the figures.

pub mod follower;
pub mod ledger;
pub mod producer;
pub mod replayer;

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, ensure};
use booblik_client::{Client, ConnectionConfig};
use serde::Serialize;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::broker_host::{BrokerHost, BrokerProcess, BrokerSpec};
use crate::harness::Harness;
use crate::progress::Progress;
use ledger::Ledger;

/// Topic of the soak.
pub const TOPIC: &str = "soak";
/// How long followers may take to reach the log end after the producers stop.
const DRAIN_LIMIT: Duration = Duration::from_mins(2);
/// How often the progress message is refreshed.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);
/// Attempts to read the final log ends (the broker may be restarting).
const END_PROBE_ATTEMPTS: u32 = 100;

/// The shape of a soak.
#[derive(Debug, Clone, Copy)]
pub struct SoakConfig {
    /// How long producers produce.
    pub duration_s: u64,
    /// Partitions of the soak topic (one producer each).
    pub partitions: u32,
    /// Followers per partition.
    pub followers_per_partition: u32,
    /// Replayers.
    pub replayers: u32,
    /// Records per second per producer.
    pub rate_per_producer: u64,
    /// Graceful broker restarts, spread evenly over the run (embedded broker only).
    pub broker_restarts: u32,
    /// Shortest life of one follower consumer.
    pub restart_min_ms: u64,
    /// Longest life of one follower consumer.
    pub restart_max_ms: u64,
    /// Chance a follower restart resumes behind its saved position.
    pub behind_probability: f64,
    /// Smallest payload.
    pub min_bytes: usize,
    /// Largest payload.
    pub max_bytes: usize,
}

/// What a soak did and found.
#[derive(Debug, Clone, Serialize)]
pub struct SoakRun {
    /// Seconds of producing.
    pub duration_s: u64,
    /// Partitions (= producers).
    pub partitions: u32,
    /// Followers in all.
    pub followers: u32,
    /// Replayers.
    pub replayers: u32,
    /// Broker restarts carried out.
    pub broker_restarts: u32,
    /// Records handed to `send`.
    pub records_sent: u64,
    /// Records acknowledged with an offset.
    pub records_acked: u64,
    /// Records whose send or delivery failed (broker restarting).
    pub records_failed: u64,
    /// Records in the logs at the end.
    pub records_in_log: u64,
    /// Records in the log whose delivery had failed (written, answer lost): legal.
    pub records_unacked_present: u64,
    /// Acknowledged records per second.
    pub acked_per_s: f64,
    /// Records read by followers (re-reads included).
    pub follower_records_read: u64,
    /// Records read again after resuming behind.
    pub follower_rereads: u64,
    /// Planned follower restarts.
    pub consumer_restarts: u64,
    /// Planned restarts that resumed behind.
    pub consumer_behind_restarts: u64,
    /// Restarts forced by lost connections.
    pub consumer_error_restarts: u64,
    /// Replays completed.
    pub replays: u64,
    /// Records read by replayers.
    pub replay_records_read: u64,
    /// Broken promises found.
    pub violations: u64,
    /// The first few of them.
    pub violation_samples: Vec<String>,
}

/// Runs the soak.
pub async fn run(
    harness: &Harness,
    config: SoakConfig,
    progress: &Progress,
) -> anyhow::Result<SoakRun> {
    ensure!(config.partitions > 0, "at least one partition");
    ensure!(
        config.restart_min_ms > 0 && config.restart_min_ms <= config.restart_max_ms,
        "restart range must be non-empty and positive"
    );
    ensure!(
        config.min_bytes >= ledger::IDENTITY_BYTES && config.min_bytes <= config.max_bytes,
        "payloads carry an 8-byte identity"
    );
    let spec = BrokerSpec {
        write_mode: harness.write_mode,
        ..BrokerSpec::with_topics(format!("{TOPIC}:{}", config.partitions))
    };
    // Embedded whatever `--broker-process` says: the soak restarts its broker.
    let mut host = BrokerHost::fresh_or_external(
        harness.external_broker.as_deref(),
        &spec,
        BrokerProcess::Embedded,
        &harness.data_parent,
    )
    .await?;
    let broker_restarts = if host.is_fresh() {
        config.broker_restarts
    } else {
        tracing::warn!("an external broker is not restarted by the soak");
        0
    };
    let ledger = Arc::new(Ledger::new(config.partitions as usize));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut end_txs = Vec::new();

    let mut producers = Vec::new();
    for partition in 0..config.partitions {
        let client = Client::connect(host.addr(), ConnectionConfig::default()).await?;
        let plan = producer::ProducerPlan {
            id: partition as u16,
            partition: partition as i32,
            rate_per_s: config.rate_per_producer,
            min_bytes: config.min_bytes,
            max_bytes: config.max_bytes,
        };
        producers.push(tokio::spawn(producer::run(
            client,
            plan,
            Arc::clone(&ledger),
            stop_rx.clone(),
        )));
    }
    let mut followers = Vec::new();
    for partition in 0..config.partitions {
        let (end_tx, end_rx) = watch::channel(None);
        end_txs.push(end_tx);
        for index in 0..config.followers_per_partition {
            let client = Client::connect(host.addr(), ConnectionConfig::default()).await?;
            let plan = follower::FollowerPlan {
                name: format!("follower p{partition}#{index}"),
                partition: partition as i32,
                restart_min_ms: config.restart_min_ms,
                restart_max_ms: config.restart_max_ms,
                behind_probability: config.behind_probability,
            };
            followers.push(tokio::spawn(follower::run(
                client,
                plan,
                Arc::clone(&ledger),
                end_rx.clone(),
            )));
        }
    }
    let mut replayers = Vec::new();
    for index in 0..config.replayers {
        let client = Client::connect(host.addr(), ConnectionConfig::default()).await?;
        replayers.push(tokio::spawn(replayer::run(
            client,
            format!("replayer #{index}"),
            config.partitions as i32,
            Arc::clone(&ledger),
            stop_rx.clone(),
        )));
    }

    // The run itself: wait, restarting the broker at even intervals.
    let started = Instant::now();
    let duration = Duration::from_secs(config.duration_s);
    let restart_every = duration / (broker_restarts + 1);
    let mut next_restart = started + restart_every;
    let mut restarts_done = 0u32;
    while started.elapsed() < duration {
        if restarts_done < broker_restarts && Instant::now() >= next_restart {
            host.restart().await?;
            restarts_done += 1;
            next_restart += restart_every;
        }
        progress.start(format!(
            "soak {}/{} s, {restarts_done} broker restarts, {} violations",
            started.elapsed().as_secs(),
            config.duration_s,
            ledger.violations().0
        ));
        tokio::time::sleep(PROGRESS_EVERY.min(duration.saturating_sub(started.elapsed()))).await;
    }
    stop_tx.send_replace(true);
    let producing_s = started.elapsed().as_secs_f64();

    let mut sent = 0u64;
    let mut acked = 0u64;
    let mut failed = 0u64;
    for task in producers {
        let tally = task.await.context("a soak producer panicked")??;
        sent += tally.sent;
        acked += tally.acked;
        failed += tally.failed;
    }
    let admin = Client::connect(host.addr(), ConnectionConfig::default()).await?;
    let ends = log_ends(&admin, config.partitions).await?;
    for (end_tx, end) in end_txs.iter().zip(&ends) {
        end_tx.send_replace(Some(*end));
    }
    progress.start("soak: followers draining to the log end");
    let drained = tokio::time::timeout(DRAIN_LIMIT, futures::future::join_all(followers))
        .await
        .context("followers did not reach the log end in time")?;
    let mut follower_totals = follower::FollowerTally::default();
    for (index, tally) in drained.into_iter().enumerate() {
        let tally = tally.context("a soak follower panicked")??;
        let partition = index / config.followers_per_partition as usize;
        if tally.final_position != ends[partition] {
            ledger.violation(format!(
                "a follower of p{partition} ended at {} instead of {}",
                tally.final_position, ends[partition]
            ));
        }
        follower_totals.records_read += tally.records_read;
        follower_totals.rereads += tally.rereads;
        follower_totals.restarts += tally.restarts;
        follower_totals.behind_restarts += tally.behind_restarts;
        follower_totals.error_restarts += tally.error_restarts;
    }
    let mut replay_totals = replayer::ReplayerTally::default();
    for task in replayers {
        let tally = task.await.context("a soak replayer panicked")??;
        replay_totals.replays += tally.replays;
        replay_totals.records_read += tally.records_read;
    }
    let (acked_in_ledger, in_log, unacked_present) = ledger.final_check(&ends);
    if acked_in_ledger != acked {
        ledger.violation(format!(
            "producers counted {acked} acknowledgements, the ledger holds {acked_in_ledger}"
        ));
    }
    host.stop().await?;
    let (violations, violation_samples) = ledger.violations();
    Ok(SoakRun {
        duration_s: config.duration_s,
        partitions: config.partitions,
        followers: config.partitions * config.followers_per_partition,
        replayers: config.replayers,
        broker_restarts: restarts_done,
        records_sent: sent,
        records_acked: acked,
        records_failed: failed,
        records_in_log: in_log,
        records_unacked_present: unacked_present,
        acked_per_s: acked as f64 / producing_s,
        follower_records_read: follower_totals.records_read,
        follower_rereads: follower_totals.rereads,
        consumer_restarts: follower_totals.restarts,
        consumer_behind_restarts: follower_totals.behind_restarts,
        consumer_error_restarts: follower_totals.error_restarts,
        replays: replay_totals.replays,
        replay_records_read: replay_totals.records_read,
        violations,
        violation_samples,
    })
}

/// The high watermark of every partition, retried while the broker is unreachable.
async fn log_ends(client: &Client, partitions: u32) -> anyhow::Result<Vec<i64>> {
    let mut last_error = None;
    for _ in 0..END_PROBE_ATTEMPTS {
        match client.topic(TOPIC).await {
            Ok(topic) => {
                return (0..partitions as i32)
                    .map(|p| {
                        topic
                            .high_watermark(p)
                            .context("a soak partition is missing")
                    })
                    .collect();
            }
            Err(error) => {
                last_error = Some(error);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    Err(last_error.map_or_else(|| anyhow::anyhow!("no attempt made"), Into::into))
}

/// The soak's figures as a markdown table.
pub fn markdown(runs: &[&SoakRun]) -> String {
    let mut out = String::from(
        "| s | partitions | followers | replayers | broker restarts | sent | acked | failed | in log | unacked present | acked/s | follower reads | re-reads | consumer restarts (behind, error) | replays | violations |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|\n",
    );
    for r in runs {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} | {} | {} | {} ({}, {}) | {} | {} |",
            r.duration_s,
            r.partitions,
            r.followers,
            r.replayers,
            r.broker_restarts,
            r.records_sent,
            r.records_acked,
            r.records_failed,
            r.records_in_log,
            r.records_unacked_present,
            r.acked_per_s,
            r.follower_records_read,
            r.follower_rereads,
            r.consumer_restarts,
            r.consumer_behind_restarts,
            r.consumer_error_restarts,
            r.replays,
            r.violations,
        );
        for sample in &r.violation_samples {
            let _ = write!(out, "\n* violation: {sample}");
        }
    }
    out
}
