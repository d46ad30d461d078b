//! A follow consumer killed with SIGKILL while records keep arriving resumes from the position it
//! saved — not from the beginning, at most one batch behind what it had handled — and between the
//! two runs every published event is handled, per partition, with per-user order kept.
//!
//! The real `follow-consumer` binary runs as a child process. Its debug log names every batch it
//! handled (`handled batch partition=… first_offset=… next_offset=…`), which is how the test knows
//! exactly what a process handled before it was killed.

mod events_support;

use std::collections::BTreeMap;
use std::ops::Range;

use booblik_offset_store::{FileOffsetStore, OffsetStore};
use events_support::{
    Sample, client, free_addr, high_watermarks, per_partition, publish, start_broker, sum_counts,
    wait_for_stats,
};

/// Small fetches make many small batches, so the kill is likely to land between two of them.
const FETCH_MAX_BYTES: &str = "1024";
const LOG_FILTER: &str = "info,booblik_samples::events::follow=debug";

fn start_follower(broker: &str, offsets: &str, stats: &str) -> Sample {
    Sample::start(
        env!("CARGO_BIN_EXE_follow-consumer"),
        &[
            "--broker",
            broker,
            "--offsets-dir",
            offsets,
            "--stats-bind",
            stats,
            "--consumer-name",
            "follow",
            "--fetch-max-bytes",
            FETCH_MAX_BYTES,
        ],
        LOG_FILTER,
    )
}

/// The batches a run logged as handled, per partition, in log order.
fn handled_batches(log: &str) -> BTreeMap<i32, Vec<Range<i64>>> {
    let mut batches: BTreeMap<i32, Vec<Range<i64>>> = BTreeMap::new();
    for line in log.lines().filter(|l| l.contains("handled batch")) {
        let field = |name: &str| -> i64 {
            line.split_whitespace()
                .find_map(|word| word.strip_prefix(&format!("{name}=")))
                .unwrap_or_else(|| panic!("no {name} in {line:?}"))
                .parse()
                .unwrap()
        };
        batches
            .entry(field("partition") as i32)
            .or_default()
            .push(field("first_offset")..field("next_offset"));
    }
    batches
}

/// Checks that `batches` are consecutive from `start`; returns where they end.
fn consecutive_from(start: i64, batches: &[Range<i64>], run: &str, partition: i32) -> i64 {
    let mut at = start;
    for batch in batches {
        assert_eq!(
            batch.start, at,
            "{run}, partition {partition}: batch {batch:?} does not continue at {at}"
        );
        at = batch.end;
    }
    at
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_consumer_killed_mid_stream_resumes_from_its_saved_position() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(&dir.path().join("broker")).await;
    let client = client(&broker).await;
    let broker_addr = broker.local_addr().to_string();
    let offsets = dir.path().join("offsets");
    let offsets_arg = offsets.to_str().unwrap();

    let history = publish(&client, 900, 30, 0).await;

    // First run: catch up on the history, then follow while more events arrive; killed mid-stream.
    let stats_addr = free_addr();
    let first_run = start_follower(&broker_addr, offsets_arg, &stats_addr.to_string());
    let more = tokio::spawn({
        let client = client.clone();
        async move { publish(&client, 1_500, 30, 3_000).await }
    });
    let before_kill = wait_for_stats(stats_addr, "the first run to be past the history", |s| {
        s["records"].as_u64().unwrap_or(0) >= 1_200
    })
    .await;
    assert!(
        before_kill["resumed_from"]
            .as_object()
            .unwrap()
            .values()
            .all(serde_json::Value::is_null),
        "with nothing saved the first run starts at the earliest offset: {before_kill}"
    );
    let first_log = first_run.kill().await;
    let more = more.await.unwrap();

    let published = sum_counts(&[&history.per_partition, &more.per_partition]);
    let hw = high_watermarks(&client).await;
    for (&partition, &end) in &hw {
        assert_eq!(
            published[&partition], end as u64,
            "the log holds what was published"
        );
    }

    // What the killed process handled, and the positions it left behind.
    let store = FileOffsetStore::open(&offsets).await.unwrap();
    let first_batches = handled_batches(&first_log);
    let mut saved = BTreeMap::new();
    for &partition in hw.keys() {
        let batches = &first_batches[&partition];
        let handled_to = consecutive_from(0, batches, "first run", partition);
        let position = store
            .load("follow", "events", partition)
            .await
            .unwrap()
            .expect("the first run saved a position");
        let last_batch = batches.last().unwrap();
        assert!(
            position > 0,
            "partition {partition}: a restart would begin from scratch"
        );
        assert!(
            (last_batch.start..=handled_to).contains(&position),
            "partition {partition}: saved {position} is not within the last handled batch \
             {last_batch:?} — the checkpoint must be at most one batch behind"
        );
        saved.insert(partition, (position, handled_to));
    }

    // Second run: resumes from the saved positions and catches up.
    let stats_addr = free_addr();
    let second_run = start_follower(&broker_addr, offsets_arg, &stats_addr.to_string());
    let after = wait_for_stats(stats_addr, "the second run to catch up", |s| {
        per_partition(s, "next_offset") == hw
    })
    .await;
    let second_log = second_run.kill().await;

    let resumed_from = per_partition(&after, "resumed_from");
    let records = per_partition(&after, "per_partition");
    let second_batches = handled_batches(&second_log);
    for (&partition, &(position, first_handled_to)) in &saved {
        assert_eq!(
            resumed_from[&partition], position,
            "resumed from the saved position"
        );
        assert_eq!(records[&partition], hw[&partition] - position);
        let handled_to = consecutive_from(
            position,
            &second_batches[&partition],
            "second run",
            partition,
        );
        assert_eq!(handled_to, hw[&partition]);
        // [0, first_handled_to) ∪ [position, hw) with position ≤ first_handled_to covers [0, hw):
        // every published event was handled; the overlap is what at-least-once repeated.
        let distinct = first_handled_to.max(handled_to);
        assert_eq!(distinct as u64, published[&partition]);
        println!(
            "partition {partition}: first run handled 0..{first_handled_to}, saved {position}, \
             second run handled {position}..{handled_to} ({} repeated)",
            first_handled_to - position
        );
    }
    assert_eq!(after["order_violations"], 0, "per-user order kept: {after}");
    assert_eq!(after["skipped_offsets"], 0, "nothing skipped: {after}");
}
