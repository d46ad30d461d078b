//! SIGKILL of an R3 stream's leader while a writer appends and a follower reads: after the
//! failover every acknowledged record is in the stream at the offset its append returned, and
//! the follower — which kept reading through the failover — saw the stream in order with no
//! offset skipped.
//!
//! Needs `nats-server`: `#[ignore]`d, run by `.ci/run` with `--ignored`
//! (`cargo test -p booblik-samples --test jetstream_acknowledged_records_survive_a_killed_stream_leader -- --ignored`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use booblik_samples::engine::jetstream::{StreamSettings, naming};
use booblik_samples::engine::{Ack, JetStreamEngine, LogEngine, PartitionLog, ReadLimits};
use booblik_samples::support::nats_cluster::NatsCluster;
use bytes::Bytes;
use tokio::sync::watch;

const TOPIC: &str = "failover";
const RECORDS: usize = 400;
const KILL_AFTER: usize = 100;
/// A write outage longer than this fails the test: measured 6–9 s on this machine kind.
const OUTAGE_LIMIT: Duration = Duration::from_secs(40);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nats-server; run by .ci/run with --ignored"]
async fn every_acknowledged_record_is_read_after_the_stream_leader_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = NatsCluster::start(dir.path(), 3).unwrap();
    let engine = JetStreamEngine::connect(&cluster.urls()).await.unwrap();
    engine.wait_ready(Duration::from_secs(30)).await.unwrap();
    engine
        .ensure_topics(&[(TOPIC.into(), 1)], &StreamSettings::default())
        .await
        .unwrap();
    let log = engine.open(TOPIC, 0).await.unwrap();

    // The follower: its own connection, reading from the origin until it has seen `RECORDS`
    // distinct payloads, retrying transient failures from the same position.
    let reader_engine = JetStreamEngine::connect(&cluster.urls()).await.unwrap();
    let reader = reader_engine.open(TOPIC, 0).await.unwrap();
    let (done_tx, done_rx) = watch::channel(false);
    let follower = tokio::spawn(follow(reader, done_rx));

    let mut acknowledged: BTreeMap<i64, Bytes> = BTreeMap::new();
    let mut retries = 0;
    let mut outage = Duration::ZERO;
    let mut killed_at = None;
    for i in 0..RECORDS {
        if i == KILL_AFTER {
            cluster
                .kill_stream_leader(&engine, &naming::stream_name(TOPIC, 0).unwrap())
                .await
                .unwrap();
            killed_at = Some(Instant::now());
        }
        let payload = Bytes::from(format!("record-{i}"));
        loop {
            match log
                .append(std::slice::from_ref(&payload), Ack::Forced)
                .await
            {
                Ok(appended) => {
                    acknowledged.insert(appended.offsets[0], payload.clone());
                    if let Some(at) = killed_at.take() {
                        outage = at.elapsed();
                    }
                    break;
                }
                Err(error) => {
                    assert!(
                        error.is_transient(),
                        "only transient failures during a failover: {error}"
                    );
                    retries += 1;
                    let since = killed_at.map_or(Duration::ZERO, |at| at.elapsed());
                    assert!(
                        since < OUTAGE_LIMIT,
                        "no write accepted {since:?} after the kill"
                    );
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
    done_tx.send(true).unwrap();
    eprintln!("write outage after the kill: {outage:?}, {retries} retried appends");

    // A fresh reader after the failover: every acknowledged record at its offset.
    let check = JetStreamEngine::connect(&cluster.urls()).await.unwrap();
    let after = check.open(TOPIC, 0).await.unwrap();
    let stream = read_all(after.as_ref()).await;
    for (offset, payload) in &acknowledged {
        assert_eq!(
            stream.get(offset),
            Some(payload),
            "acknowledged record at {offset} lost"
        );
    }

    // The follower read through the failover without a skip.
    let followed = tokio::time::timeout(Duration::from_mins(1), follower)
        .await
        .expect("the follower catches up")
        .unwrap();
    let expected: Vec<i64> = stream.keys().copied().collect();
    assert_eq!(
        followed, expected,
        "the follower saw every offset once, in order"
    );
}

/// Reads from the origin until `done` and the end is reached; returns the offsets seen.
async fn follow(log: Arc<dyn PartitionLog>, done: watch::Receiver<bool>) -> Vec<i64> {
    let limits = ReadLimits {
        wait: Duration::from_millis(500),
        ..ReadLimits::default()
    };
    let mut position = log.bounds().await.unwrap().origin;
    let mut seen = Vec::new();
    loop {
        match log.read(position, limits).await {
            Ok(batch) => {
                seen.extend(batch.records.iter().map(|record| record.offset));
                let caught_up = batch.records.is_empty();
                position = batch.next_offset;
                if caught_up && *done.borrow() {
                    let end = loop {
                        if let Ok(bounds) = log.bounds().await {
                            break bounds.end;
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    };
                    if position >= end {
                        return seen;
                    }
                }
            }
            Err(error) => {
                assert!(
                    error.is_transient(),
                    "the follower fails only transiently: {error}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Every record, retrying transient failures (a cursor placed on the dead node times out) for
/// at most `OUTAGE_LIMIT`.
async fn read_all(log: &dyn PartitionLog) -> BTreeMap<i64, Bytes> {
    let deadline = Instant::now() + OUTAGE_LIMIT;
    let retry = |error: booblik_samples::engine::EngineError| {
        assert!(error.is_transient() && Instant::now() < deadline, "{error}");
    };
    let bounds = loop {
        match log.bounds().await {
            Ok(bounds) => break bounds,
            Err(error) => retry(error),
        }
    };
    let mut records = BTreeMap::new();
    let mut position = bounds.start;
    while position < bounds.end {
        let limits = ReadLimits {
            wait: Duration::ZERO,
            ..ReadLimits::default()
        };
        let batch = match log.read(position, limits).await {
            Ok(batch) => batch,
            Err(error) => {
                retry(error);
                continue;
            }
        };
        for record in batch.records {
            records.insert(record.offset, record.payload);
        }
        position = batch.next_offset;
    }
    records
}
