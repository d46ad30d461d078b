//! Partition p is relayed to partition p, so a target with another partition count is refused
//! before anything is read or written, with an error that says why.

mod relay_support;

use relay_support::{outputs, relay_args, spawn_relay, start_broker};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_refuses_a_target_with_another_partition_count() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(&dir.path().join("b"), "events:2,mirror:3").await;
    let args = relay_args(
        dir.path(),
        &format!("booblik://{}/events", broker.local_addr()),
        &format!("booblik://{}/mirror", broker.local_addr()),
        &["--exit-when-caught-up"],
    );
    let mut child = spawn_relay(dir.path(), 0, &args);
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .unwrap();
    let (summary, log) = outputs(dir.path(), 0);
    assert!(!status.success(), "the relay started: {log}");
    assert!(summary.is_none());
    assert!(
        log.contains("has 2 partitions") && log.contains("has 3"),
        "the error does not name both counts: {log}"
    );
    assert!(
        !dir.path().join("offsets/relay").exists(),
        "a position was saved"
    );
}
