//! SIGTERM (what `docker stop` sends) stops the follow consumer cleanly: it exits 0 with the
//! position of everything it handled saved, so the next run resumes exactly there and repeats
//! nothing.

mod events_support;

use booblik_offset_store::{FileOffsetStore, OffsetStore};
use events_support::{
    Sample, client, free_addr, high_watermarks, per_partition, publish, start_broker,
    wait_for_stats,
};

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
            "graceful",
            "--partitions",
            "0,2",
        ],
        "info",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_saves_the_position_of_everything_handled() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(&dir.path().join("broker")).await;
    let client = client(&broker).await;
    let broker_addr = broker.local_addr().to_string();
    let offsets = dir.path().join("offsets");
    let offsets_arg = offsets.to_str().unwrap();
    publish(&client, 600, 20, 0).await;
    let hw = high_watermarks(&client).await;
    let followed: std::collections::BTreeMap<i32, i64> = hw
        .iter()
        .filter(|(p, _)| [0, 2].contains(*p))
        .map(|(&p, &o)| (p, o))
        .collect();

    let stats_addr = free_addr();
    let run = start_follower(&broker_addr, offsets_arg, &stats_addr.to_string());
    let stats = wait_for_stats(stats_addr, "the consumer to catch up", |s| {
        per_partition(s, "next_offset") == followed
    })
    .await;
    assert_eq!(
        stats["records"].as_i64().unwrap(),
        followed.values().sum::<i64>(),
        "only the partitions asked for were followed: {stats}"
    );
    let (status, log) = run.terminate().await;
    assert!(status.success(), "exit status {status}; log:\n{log}");

    let store = FileOffsetStore::open(&offsets).await.unwrap();
    for (&partition, &end) in &followed {
        let saved = store.load("graceful", "events", partition).await.unwrap();
        assert_eq!(
            saved,
            Some(end),
            "partition {partition}: everything handled is saved"
        );
    }
    assert_eq!(store.load("graceful", "events", 1).await.unwrap(), None);

    // The next run starts exactly where the last one stopped and has nothing to repeat.
    let stats_addr = free_addr();
    let rerun = start_follower(&broker_addr, offsets_arg, &stats_addr.to_string());
    let stats = wait_for_stats(stats_addr, "the second run to start", |s| {
        per_partition(s, "next_offset").len() == followed.len()
    })
    .await;
    assert_eq!(per_partition(&stats, "resumed_from"), followed);
    assert_eq!(stats["records"], 0, "nothing repeated: {stats}");
    rerun.kill().await;
}
