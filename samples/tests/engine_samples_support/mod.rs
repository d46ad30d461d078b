//! The events samples' behaviours written once, run on each engine: a test file picks the engine
//! (an embedded booblik broker, or a 3-node JetStream cluster with R3 streams) and hands over
//! the engine and the flags that point a sample binary at it. Nothing here branches on the
//! engine; offsets are asked of the engine (`Bounds::origin`, `Bounds::end`), never assumed.

#![allow(dead_code)] // Each test file uses a different subset.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use booblik_offset_store::{FileOffsetStore, OffsetStore};
use booblik_samples::engine::{Bounds, LogEngine, ReadLimits};
use booblik_samples::events::crosscheck::projection_matches_replay;
use booblik_samples::events::projection::{ProjectionConfig, ProjectionState, run_projection};
use booblik_samples::events::publisher::PublisherSnapshot;
use booblik_samples::events::replay::{ReplayConfig, replay};
use booblik_samples::support::shutdown::Shutdown;

pub mod queue;

#[path = "../events_support/mod.rs"]
mod events_support;

pub use events_support::{Sample, WAIT_LIMIT, free_addr, get_json, per_partition, sum_counts};

/// An embedded booblik broker with the demo's topics, its log in `dir`, and the flags that point
/// a sample binary at it.
pub async fn start_booblik(dir: &Path) -> (booblik_broker::Broker, [String; 2]) {
    let broker = events_support::start_broker(dir).await;
    let flags = ["--broker".to_owned(), broker.local_addr().to_string()];
    (broker, flags)
}

/// The booblik engine over a client of `broker`.
pub async fn booblik_engine(broker: &booblik_broker::Broker) -> Arc<dyn LogEngine> {
    events_support::engine(&events_support::client(broker).await)
}

/// Polls `GET /stats` of `sample` on `addr` until `done(stats)` holds; returns those stats.
/// After [`WAIT_LIMIT`] kills the sample and panics with the last stats and its stderr.
async fn wait_for_stats(
    sample: Sample,
    addr: std::net::SocketAddr,
    what: &str,
    done: impl Fn(&serde_json::Value) -> bool,
) -> (Sample, serde_json::Value) {
    let deadline = tokio::time::Instant::now() + WAIT_LIMIT;
    let mut last = None;
    loop {
        if let Some((200, stats)) = get_json(addr, "/stats").await {
            if done(&stats) {
                return (sample, stats);
            }
            last = Some(stats);
        }
        if tokio::time::Instant::now() >= deadline {
            let stderr = sample.kill().await;
            panic!("timed out waiting for {what}; last stats: {last:?}\nstderr:\n{stderr}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The events topic.
pub const TOPIC: &str = "events";
/// Records the first follower run is killed after, at the earliest.
const KILL_AFTER_RECORDS: i64 = 100;

/// Runs the `publisher` binary on the engine of `flags`: `count` events over `users` users, as
/// fast as it can; returns its final stats (its stdout).
pub async fn publish_with_binary(flags: &[String], count: u64, users: u32) -> PublisherSnapshot {
    let mut args: Vec<String> = flags.to_vec();
    args.extend(
        [
            "--count",
            &count.to_string(),
            "--users",
            &users.to_string(),
            "--rate",
            "0",
        ]
        .map(String::from),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (status, out, err) = Sample::start(env!("CARGO_BIN_EXE_publisher"), &args, "warn")
        .finish()
        .await;
    assert!(status.success(), "publisher: exit {status}\n{err}");
    let published: PublisherSnapshot = serde_json::from_str(out.trim())
        .unwrap_or_else(|e| panic!("the publisher's stdout is not its stats ({e}):\n{out}"));
    assert_eq!(published.sent, count, "every event acknowledged: {err}");
    published
}

/// Per partition of `events`: its bounds now.
pub async fn bounds(engine: &dyn LogEngine) -> BTreeMap<i32, Bounds> {
    let mut bounds = BTreeMap::new();
    for partition in 0..engine.partition_count(TOPIC).await.unwrap() {
        let log = engine.open(TOPIC, partition).await.unwrap();
        bounds.insert(partition, log.bounds().await.unwrap());
    }
    bounds
}

fn start_follower(flags: &[String], offsets: &Path, stats: &str) -> Sample {
    let mut args: Vec<String> = flags.to_vec();
    args.extend(
        [
            "--offsets-dir",
            offsets.to_str().unwrap(),
            "--stats-bind",
            stats,
            "--consumer-name",
            "resume",
            // Small reads make many batches, so the kill lands between two of them.
            "--fetch-max-bytes",
            "1024",
            "--max-wait-ms",
            "200",
        ]
        .map(String::from),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Sample::start(env!("CARGO_BIN_EXE_follow-consumer"), &args, "info")
}

/// The follow consumer, SIGKILLed mid-run and started again, resumes exactly at the positions
/// it saved — not at the origin — and between the two runs handles every record of every
/// partition, the second run only those at and after its saved positions, with per-user order
/// kept and no offset skipped.
pub async fn follow_consumer_resumes_from_its_saved_position(
    engine: Arc<dyn LogEngine>,
    flags: &[String],
    dir: &Path,
) {
    let offsets = dir.join("offsets");
    publish_with_binary(flags, 600, 20).await;

    // Run 1: killed once it has handled some records.
    let stats = free_addr();
    let first = start_follower(flags, &offsets, &stats.to_string());
    let (first, seen) = wait_for_stats(first, stats, "the first run to handle some records", |s| {
        s["records"].as_i64().unwrap_or(0) >= KILL_AFTER_RECORDS
    })
    .await;
    assert_eq!(seen["duplicates"], 0, "{seen}");
    first.kill().await;

    // What it saved, read from the store itself.
    let store = FileOffsetStore::open(&offsets).await.unwrap();
    let before = bounds(engine.as_ref()).await;
    let mut saved = BTreeMap::new();
    for &partition in before.keys() {
        if let Some(offset) = store.load("resume", TOPIC, partition).await.unwrap() {
            saved.insert(partition, offset);
        }
    }
    assert!(
        saved.iter().any(|(p, &offset)| offset > before[p].origin),
        "the first run saved a position past the origin: {saved:?}"
    );
    publish_with_binary(flags, 300, 20).await;
    let after = bounds(engine.as_ref()).await;

    // Run 2: resumes at the saved positions and catches up with the log.
    let stats = free_addr();
    let second = start_follower(flags, &offsets, &stats.to_string());
    let (second, caught_up) = wait_for_stats(second, stats, "the second run to catch up", |s| {
        let next = per_partition(s, "next_offset");
        after.iter().all(|(p, b)| next.get(p) == Some(&b.end))
    })
    .await;
    let resumed = per_partition(&caught_up, "resumed_from");
    assert_eq!(
        resumed, saved,
        "the second run starts at the saved positions"
    );
    let handled = per_partition(&caught_up, "per_partition");
    for (partition, b) in &after {
        let from = saved.get(partition).copied().unwrap_or(b.start);
        assert_eq!(
            handled.get(partition).copied().unwrap_or(0),
            b.end - from,
            "partition {partition}: the second run handles exactly [{from}, {})",
            b.end
        );
    }
    for field in [
        "duplicates",
        "order_violations",
        "skipped_offsets",
        "undecodable",
    ] {
        assert_eq!(caught_up[field], 0, "{field}: {caught_up}");
    }
    let (status, stderr) = second.terminate().await;
    assert!(status.success(), "{status}\n{stderr}");
    // Run 2 saved the end on its way out: everything is handled.
    for (partition, b) in &after {
        assert_eq!(
            store.load("resume", TOPIC, *partition).await.unwrap(),
            Some(b.end),
            "partition {partition}"
        );
    }
}

/// The projection (replay, then follow) folds the log into a model that equals a replay of the
/// log: after catching up on history, and after following events published while it runs.
pub async fn projection_equals_a_replay(engine: Arc<dyn LogEngine>, flags: &[String]) {
    let history = publish_with_binary(flags, 500, 30).await;

    let state = ProjectionState::new();
    let stop = Shutdown::new();
    let projection = tokio::spawn(run_projection(
        Arc::clone(&engine),
        ProjectionConfig {
            topic: TOPIC.into(),
            limits: ReadLimits {
                wait: Duration::from_millis(200),
                ..ReadLimits::default()
            },
            snapshot: None,
        },
        Arc::clone(&state),
        stop.clone(),
    ));
    let wait_for_events = |events: u64| {
        let state = Arc::clone(&state);
        async move {
            tokio::time::timeout(WAIT_LIMIT, async {
                while !(state.is_live() && state.model().events() == events) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
            .await
            .unwrap_or_else(|_| panic!("the projection did not reach {events} events"));
        }
    };
    wait_for_events(history.sent).await;
    let caught_up = state.model().clone();
    let check = projection_matches_replay(engine.as_ref(), TOPIC, &caught_up)
        .await
        .unwrap();
    assert!(check.passed, "after catching up: {}", check.detail);

    let live = publish_with_binary(flags, 300, 30).await;
    wait_for_events(history.sent + live.sent).await;
    let model = state.model().clone();
    let check = projection_matches_replay(engine.as_ref(), TOPIC, &model)
        .await
        .unwrap();
    assert!(check.passed, "after following: {}", check.detail);

    // The same against a whole replay and against what the publisher acknowledged.
    let replayed = replay(
        engine.as_ref(),
        &ReplayConfig {
            topic: TOPIC.into(),
            partitions: None,
            limits: ReadLimits::default(),
        },
    )
    .await
    .unwrap();
    assert_eq!(model.events_per_user(), replayed.per_user);
    let replayed_per_partition: BTreeMap<i32, u64> = replayed
        .per_partition
        .iter()
        .map(|(&p, r)| (p, r.records))
        .collect();
    assert_eq!(
        replayed_per_partition,
        sum_counts(&[&history.per_partition, &live.per_partition]),
        "the log holds what the publisher acknowledged"
    );
    let ends: BTreeMap<i32, i64> = bounds(engine.as_ref())
        .await
        .into_iter()
        .filter(|(_, b)| b.end > b.start)
        .map(|(p, b)| (p, b.end))
        .collect();
    assert_eq!(
        model.positions(),
        ends,
        "the fold reached every partition's end"
    );
    assert_eq!(replayed.violations + replayed.undecodable, 0);

    stop.trigger();
    projection.await.unwrap().unwrap();
}
