//! The `booblik` CLI: lines in through `produce`, records out through `consume`, `metadata` in
//! between — the round trip a person does by hand.

mod support;

use std::process::Stdio;

use support::{FakeBroker, within};
use tokio::io::AsyncWriteExt;

const BINARY: &str = env!("CARGO_BIN_EXE_booblik");

async fn booblik(broker: &FakeBroker, args: &[&str], stdin: &str) -> String {
    let mut child = tokio::process::Command::new(BINARY)
        .arg("--broker")
        .arg(broker.addr())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).await.unwrap();
    drop(input);
    let output = within(&format!("booblik {args:?}"), child.wait_with_output())
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "booblik {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[tokio::test]
async fn lines_produced_with_a_key_are_consumed_in_order() {
    let broker = FakeBroker::start(&[("events", 3)]).await;

    booblik(
        &broker,
        &["produce", "events", "--key", "user-1"],
        "one\ntwo\n\nthree\n",
    )
    .await;

    // "user-1" is partition 1 of 3 (golden vectors); the empty line was skipped.
    assert_eq!(
        broker.records("events", 1),
        vec![b"one".to_vec(), b"two".to_vec(), b"three".to_vec()]
    );
    let text = booblik(&broker, &["consume", "events"], "").await;
    assert_eq!(text, "one\ntwo\nthree\n");
    let limited = booblik(
        &broker,
        &[
            "consume",
            "events",
            "--partition",
            "1",
            "--from",
            "1",
            "--max",
            "1",
            "--format",
            "hex",
            "--offsets",
        ],
        "",
    )
    .await;
    assert_eq!(limited, format!("1:1\t{}\n", hex::encode("two")));
    let metadata = booblik(&broker, &["metadata", "events"], "").await;
    assert!(metadata.contains("events\t1\t0\t3"), "{metadata}");
}

#[tokio::test]
async fn follow_prints_records_until_max() {
    let broker = FakeBroker::start(&[("events", 2)]).await;
    broker.append("events", 0, &[b"a"]);
    broker.append("events", 1, &[b"b"]);

    let text = booblik(
        &broker,
        &["consume", "events", "--follow", "--max", "2"],
        "",
    )
    .await;

    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, vec!["a", "b"]);
}
