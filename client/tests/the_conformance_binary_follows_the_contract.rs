//! `booblik-conformance` answers the cross-language contract exactly: `key=value` lines, exit 0
//! for carried-out verbs including refusals (`error=NAME`), non-zero with a message on stderr
//! for usage and connection failures, and `produce … none` returns at once.

mod support;

use std::collections::BTreeMap;
use std::process::Output;
use std::time::Duration;

use support::{FakeBroker, within};

const BINARY: &str = env!("CARGO_BIN_EXE_booblik-conformance");

/// Runs the binary against `broker` (if any) and returns its output.
async fn run(broker: Option<&FakeBroker>, args: &[&str]) -> Output {
    let mut command = tokio::process::Command::new(BINARY);
    command.args(args).env_remove("BOOBLIK_BROKER");
    if let Some(broker) = broker {
        command.env("BOOBLIK_BROKER", broker.addr());
    }
    within(&format!("booblik-conformance {args:?}"), command.output())
        .await
        .unwrap()
}

/// `{key: [values]}` of a successful run.
async fn ask(broker: &FakeBroker, args: &[&str]) -> BTreeMap<String, Vec<String>> {
    let output = run(Some(broker), args).await;
    assert!(
        output.status.success(),
        "{args:?} exited {:?}: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let mut answer: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in String::from_utf8(output.stdout).unwrap().lines() {
        let (key, value) = line.split_once('=').expect("key=value lines");
        answer
            .entry(key.to_owned())
            .or_default()
            .push(value.to_owned());
    }
    answer
}

fn one<'a>(answer: &'a BTreeMap<String, Vec<String>>, key: &str) -> &'a str {
    match answer.get(key).map(Vec::as_slice) {
        Some([value]) => value,
        other => panic!("expected one {key}=, got {other:?} in {answer:?}"),
    }
}

#[tokio::test]
async fn capabilities_declare_both_roles() {
    let broker = FakeBroker::start(&[]).await;
    let answer = ask(&broker, &["capabilities"]).await;
    assert_eq!(one(&answer, "roles"), "producer,consumer");
    assert_eq!(one(&answer, "name"), "booblik-rs");
}

#[tokio::test]
async fn metadata_lists_every_partition_with_its_offsets() {
    let broker = FakeBroker::start(&[("conformance", 3)]).await;
    broker.append("conformance", 1, &[b"x", b"y"]);
    let answer = ask(&broker, &["metadata", "conformance"]).await;
    assert_eq!(answer["partition"], vec!["0 0 0", "1 0 2", "2 0 0"]);
}

#[tokio::test]
async fn produce_reports_offsets_and_the_records_arrive_byte_for_byte() {
    let broker = FakeBroker::start(&[("single", 1)]).await;
    let every_byte: Vec<u8> = (0..=255).collect();
    let answer = ask(
        &broker,
        &[
            "produce",
            "single",
            "0",
            "written",
            &hex::encode(&every_byte),
        ],
    )
    .await;
    assert_eq!(one(&answer, "baseOffset"), "0");
    assert_eq!(one(&answer, "logEndOffset"), "1");

    let batch: Vec<String> = (0..10).map(|i| hex::encode(format!("batch-{i}"))).collect();
    let answer = ask(
        &broker,
        &["produce", "single", "0", "forced", &batch.join(",")],
    )
    .await;
    assert_eq!(one(&answer, "baseOffset"), "1");
    assert_eq!(one(&answer, "logEndOffset"), "11");
    let records = broker.records("single", 0);
    assert_eq!(records[0], every_byte);
    assert_eq!(records[10], b"batch-9");
}

#[tokio::test]
async fn produce_with_ack_none_prints_nothing_and_returns_at_once() {
    let broker = FakeBroker::start(&[("single", 1)]).await;
    broker.never_answer();
    let answer = ask(
        &broker,
        &["produce", "single", "0", "none", &hex::encode("quiet")],
    )
    .await;
    assert!(answer.is_empty(), "{answer:?}");
    within("the record to arrive", async {
        while broker.records("single", 0).is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn refusals_are_printed_as_error_names_with_exit_zero() {
    let broker = FakeBroker::start(&[("conformance", 3), ("single", 1)]).await;
    let empty = ask(&broker, &["produce", "single", "0", "written", ""]).await;
    assert_eq!(one(&empty, "error"), "CORRUPT_REQUEST");
    assert!(
        broker.records("single", 0).is_empty(),
        "the empty record was written"
    );

    let topic = ask(&broker, &["produce", "no-such-topic", "0", "written", "78"]).await;
    assert_eq!(one(&topic, "error"), "UNKNOWN_TOPIC_OR_PARTITION");
    let partition = ask(&broker, &["produce", "conformance", "8", "written", "78"]).await;
    assert_eq!(one(&partition, "error"), "UNKNOWN_TOPIC_OR_PARTITION");
    let metadata = ask(&broker, &["metadata", "no-such-topic"]).await;
    assert_eq!(one(&metadata, "error"), "UNKNOWN_TOPIC_OR_PARTITION");
}

#[tokio::test]
async fn produce_keyed_uses_the_shared_partitioner() {
    let broker = FakeBroker::start(&[("conformance", 3)]).await;
    // From the golden vectors (p3): "user-1" → 1, 0xff → 2, 0x80 → 0, the empty key → 1.
    for (key_hex, expected) in [("757365722d31", "1"), ("ff", "2"), ("80", "0"), ("", "1")] {
        let payload = format!("keyed:{key_hex}");
        let answer = ask(
            &broker,
            &[
                "produce-keyed",
                "conformance",
                key_hex,
                &hex::encode(&payload),
            ],
        )
        .await;
        assert_eq!(one(&answer, "partition"), expected, "key {key_hex:?}");
        let partition: i32 = expected.parse().unwrap();
        assert!(
            broker
                .records("conformance", partition)
                .contains(&payload.into_bytes())
        );
    }
}

#[tokio::test]
async fn fetch_returns_records_drops_tails_and_reports_what_never_fits() {
    let broker = FakeBroker::start(&[("single", 1)]).await;
    let payloads: [&[u8]; 3] = [&[b'A'; 100], &[b'B'; 100], &[b'C'; 100]];
    broker.append("single", 0, &payloads);
    broker.append("single", 0, &[&[b'X'; 500]]);

    let all = ask(&broker, &["fetch", "single", "0", "0", "1048576"]).await;
    assert_eq!(one(&all, "highWatermark"), "4");
    assert_eq!(all["record"].len(), 4);
    assert_eq!(all["record"][0], hex::encode([b'A'; 100]));

    let cut = ask(&broker, &["fetch", "single", "0", "0", "150"]).await;
    assert_eq!(cut["record"], vec![hex::encode([b'A'; 100])]);

    let end = ask(&broker, &["fetch", "single", "0", "4", "1048576"]).await;
    assert_eq!(one(&end, "highWatermark"), "4");
    assert!(
        !end.contains_key("record") && !end.contains_key("error"),
        "{end:?}"
    );

    let too_large = ask(&broker, &["fetch", "single", "0", "3", "100"]).await;
    assert_eq!(one(&too_large, "recordExceedsMaxBytes"), "500");
    assert!(!too_large.contains_key("record"));

    let past = ask(&broker, &["fetch", "single", "0", "1004", "1048576"]).await;
    assert_eq!(one(&past, "error"), "OFFSET_OUT_OF_RANGE");
}

#[tokio::test]
async fn usage_and_connection_failures_exit_non_zero_with_a_message() {
    let broker = FakeBroker::start(&[("single", 1)]).await;
    for args in [&["no-such-verb"][..], &[], &["fetch", "single", "0"]] {
        let output = run(Some(&broker), args).await;
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(!output.stderr.is_empty());
    }
    let without_broker = run(None, &["metadata", "single"]).await;
    assert_eq!(without_broker.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&without_broker.stderr).contains("BOOBLIK_BROKER"));

    let addr = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().to_string()
    };
    let output = within(
        "an unreachable broker",
        tokio::process::Command::new(BINARY)
            .args(["metadata", "single"])
            .env("BOOBLIK_BROKER", &addr)
            .output(),
    )
    .await
    .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains(&addr));
}
