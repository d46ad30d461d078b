//! `--stats-bind`: while the relay follows its source, `GET /stats` serves the same counters
//! the JSON summary prints on exit. A booblik → booblik relay (both brokers embedded) is
//! scraped until it relayed everything produced; after SIGTERM its summary agrees.

mod relay_support;

use std::time::Duration;

use relay_support::{
    PARTITIONS, booblik, free_addr, get_json, outputs, produce, relay_args, spawn_relay,
    start_broker,
};

const RECORDS: u64 = 700;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_serves_its_counters_on_stats_bind_and_its_summary_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let source = start_broker(&dir.path().join("a"), "events:2").await;
    let target = start_broker(&dir.path().join("b"), "mirror:2").await;
    produce(&booblik(&source).await, "events", RECORDS, 100).await;

    let stats = free_addr();
    let args = relay_args(
        dir.path(),
        &format!("booblik://{}/events", source.local_addr()),
        &format!("booblik://{}/mirror", target.local_addr()),
        &["--stats-bind", &stats.to_string()],
    );
    let mut child = spawn_relay(dir.path(), 0, &args);
    let deadline = tokio::time::Instant::now() + Duration::from_mins(1);
    let scraped = loop {
        if let Some((200, body)) = get_json(stats, "/stats").await
            && body["relayed"] == RECORDS * PARTITIONS as u64
        {
            break body;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the relay exited: {}",
            outputs(dir.path(), 0).1
        );
        assert!(
            tokio::time::Instant::now() < deadline,
            "never relayed everything"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    for p in 0..PARTITIONS as usize {
        assert_eq!(scraped["partitions"][p]["position"], RECORDS, "{scraped}");
        assert_eq!(
            scraped["partitions"][p]["end_at_start"], RECORDS,
            "{scraped}"
        );
    }
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(
        child.wait().unwrap().success(),
        "{}",
        outputs(dir.path(), 0).1
    );
    let (summary, _) = outputs(dir.path(), 0);
    let summary = summary.expect("a summary on SIGTERM");
    assert_eq!(summary.relayed, RECORDS * PARTITIONS as u64);
    for (p, partition) in summary.partitions.iter().enumerate() {
        assert_eq!(partition.position, scraped["partitions"][p]["position"]);
    }
}
