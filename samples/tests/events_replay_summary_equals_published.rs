//! The replay consumer reads history up to the high watermark and exits with a JSON summary whose
//! per-partition and per-user counts equal what the publisher had acknowledged.

mod events_support;

use std::collections::BTreeMap;

use booblik_samples::events::replay::ReplaySummary;
use events_support::{Sample, client, publish, start_broker, sum_counts};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_replay_summary_counts_exactly_what_was_published() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path()).await;
    let client = client(&broker).await;
    // Two publisher runs: the per-user sequences restart, which is not an order violation.
    let first = publish(&client, 700, 40, 0).await;
    let second = publish(&client, 300, 40, 0).await;

    let replay = Sample::start(
        env!("CARGO_BIN_EXE_replay-consumer"),
        &["--broker", &broker.local_addr().to_string()],
        "warn",
    );
    let (status, stdout, stderr) = replay.finish().await;
    assert!(status.success(), "exit status {status}; stderr:\n{stderr}");
    let summary: ReplaySummary = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("stdout is not a summary ({e}):\n{stdout}"));

    let per_partition: BTreeMap<i32, u64> = summary
        .per_partition
        .iter()
        .map(|(&p, replayed)| (p, replayed.records))
        .collect();
    assert_eq!(
        per_partition,
        sum_counts(&[&first.per_partition, &second.per_partition])
    );
    assert_eq!(
        summary.per_user,
        sum_counts(&[&first.per_user, &second.per_user])
    );
    assert_eq!(summary.records, 1_000);
    assert_eq!(summary.violations, 0);
    assert_eq!(summary.undecodable, 0);
    for (partition, replayed) in &summary.per_partition {
        assert_eq!(
            (replayed.from_offset, replayed.end_offset),
            (0, replayed.records as i64),
            "partition {partition} was read from its start to its high watermark"
        );
    }
}
