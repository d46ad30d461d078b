//! The cross-language conformance checks, run with `booblik-conformance` against the real
//! broker started as the harness expects (`conformance:3,single:1`): every producer and consumer
//! check of the harness, verified by reading the log independently of the binary under test.

mod support;

use std::collections::BTreeMap;

use booblik_client::{Batch, Connection};
use booblik_protocol::{AckPolicy, FetchRequest, RecordSet, TopicName};
use support::real_broker::RealBroker;
use support::{test_config, within};

const BINARY: &str = env!("CARGO_BIN_EXE_booblik-conformance");
const VECTORS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../broker/protocol/tests/vectors/partitioner-fnv1a.tsv"
);

type Answer = BTreeMap<String, Vec<String>>;

async fn call(broker: &RealBroker, args: &[&str]) -> Answer {
    let output = within(
        &format!("booblik-conformance {args:?}"),
        tokio::process::Command::new(BINARY)
            .args(args)
            .env("BOOBLIK_BROKER", broker.addr())
            .output(),
    )
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "{args:?} exited {:?}: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let mut answer = Answer::new();
    for line in String::from_utf8(output.stdout).unwrap().lines() {
        let (key, value) = line.split_once('=').unwrap();
        answer.entry(key.into()).or_default().push(value.into());
    }
    answer
}

fn one(answer: &Answer, key: &str) -> String {
    answer
        .get(key)
        .and_then(|v| v.first())
        .cloned()
        .unwrap_or_else(|| panic!("no {key}= in {answer:?}"))
}

/// Reads the log directly (not through the binary under test).
struct Reader {
    connection: Connection,
}

impl Reader {
    async fn watermark(&self, topic: &str, partition: i32) -> i64 {
        let topic = TopicName::new(topic).unwrap();
        let metadata = self.connection.metadata(&[topic]).await.unwrap();
        metadata.topics[0].partitions[partition as usize].high_watermark
    }

    async fn read_from(&self, topic: &str, partition: i32, start: i64) -> Vec<Vec<u8>> {
        let topic = TopicName::new(topic).unwrap();
        let mut offset = start;
        let mut records = Vec::new();
        loop {
            let request = FetchRequest {
                topic: topic.clone(),
                partition,
                fetch_offset: offset,
                max_bytes: 1 << 20,
                long_poll: None,
            };
            let response = self.connection.fetch(request).await.unwrap();
            let batch = Batch::from_fetch(&topic, partition, offset, 1 << 20, response).unwrap();
            if batch.is_empty() {
                return records;
            }
            offset = batch.next_offset;
            records.extend(batch.records.into_iter().map(|r| r.payload.to_vec()));
        }
    }

    async fn produce(&self, topic: &str, payloads: &[&[u8]]) {
        let topic = TopicName::new(topic).unwrap();
        let records = RecordSet::from_payloads(payloads).unwrap();
        self.connection
            .produce(&topic, 0, AckPolicy::Written, records)
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn every_harness_check_passes_against_the_real_broker() {
    let broker = RealBroker::start("conformance:3,single:1").await;
    let reader = Reader {
        connection: Connection::connect(&broker.addr(), test_config())
            .await
            .unwrap(),
    };

    // capabilities
    let capabilities = call(&broker, &["capabilities"]).await;
    assert_eq!(one(&capabilities, "roles"), "producer,consumer");

    // metadata reports the partitions the broker actually has
    let metadata = call(&broker, &["metadata", "conformance"]).await;
    let ids: Vec<String> = metadata["partition"]
        .iter()
        .map(|l| l.split(' ').next().unwrap().to_owned())
        .collect();
    assert_eq!(ids, vec!["0", "1", "2"]);

    // a record arrives byte for byte, every byte value included
    let every_byte: Vec<u8> = (0..=255).collect();
    let before = reader.watermark("single", 0).await;
    call(
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
    assert_eq!(
        reader.read_from("single", 0, before).await,
        vec![every_byte.clone()]
    );

    // an empty record is refused, and the refusal is passed on
    let before = reader.watermark("single", 0).await;
    let empty = call(&broker, &["produce", "single", "0", "written", ""]).await;
    assert_eq!(one(&empty, "error"), "CORRUPT_REQUEST");
    assert_eq!(reader.watermark("single", 0).await, before);

    // a batch lands contiguously and in order
    let payloads: Vec<Vec<u8>> = (0..10).map(|i| format!("batch-{i}").into_bytes()).collect();
    let hexes: Vec<String> = payloads.iter().map(hex::encode).collect();
    let before = reader.watermark("single", 0).await;
    let batch = call(
        &broker,
        &["produce", "single", "0", "written", &hexes.join(",")],
    )
    .await;
    assert_eq!(one(&batch, "baseOffset"), before.to_string());
    assert_eq!(reader.read_from("single", 0, before).await, payloads);

    // ack=none returns, and the record still arrives
    let before = reader.watermark("single", 0).await;
    let none = call(
        &broker,
        &[
            "produce",
            "single",
            "0",
            "none",
            &hex::encode("unacknowledged"),
        ],
    )
    .await;
    assert!(none.is_empty(), "{none:?}");
    within("the ack=none record", async {
        while reader.watermark("single", 0).await == before {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;

    // ack=forced is acknowledged with an offset
    let before = reader.watermark("single", 0).await;
    let forced = call(
        &broker,
        &["produce", "single", "0", "forced", &hex::encode("durable")],
    )
    .await;
    assert_eq!(one(&forced, "baseOffset"), before.to_string());

    // the partitioner agrees with the vectors, through a real broker
    let text = std::fs::read_to_string(VECTORS).unwrap();
    let header: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .next_back()
        .unwrap()
        .trim()
        .split('\t')
        .collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let fields: Vec<&str> = line.split('\t').collect();
        let key_hex = fields[column("keyHex")];
        let expected: i32 = fields[column("p3")].parse().unwrap();
        let mut payload = b"keyed:".to_vec();
        payload.extend(hex::decode(key_hex).unwrap());
        let before = reader.watermark("conformance", expected).await;
        let keyed = call(
            &broker,
            &[
                "produce-keyed",
                "conformance",
                key_hex,
                &hex::encode(&payload),
            ],
        )
        .await;
        assert_eq!(
            one(&keyed, "partition"),
            expected.to_string(),
            "key {key_hex:?}"
        );
        assert!(
            reader
                .read_from("conformance", expected, before)
                .await
                .contains(&payload)
        );
    }

    // unknown topics and partitions are refused, not crashed
    let topic = call(&broker, &["produce", "no-such-topic", "0", "written", "78"]).await;
    assert_eq!(one(&topic, "error"), "UNKNOWN_TOPIC_OR_PARTITION");
    let partition = call(&broker, &["produce", "conformance", "8", "written", "78"]).await;
    assert_eq!(one(&partition, "error"), "UNKNOWN_TOPIC_OR_PARTITION");

    // fetch returns exactly what was produced
    let payloads: [&[u8]; 3] = [&every_byte, b"\x00", b"second"];
    let before = reader.watermark("single", 0).await;
    reader.produce("single", &payloads).await;
    let fetched = call(
        &broker,
        &["fetch", "single", "0", &before.to_string(), "1048576"],
    )
    .await;
    let arrived: Vec<Vec<u8>> = fetched["record"]
        .iter()
        .map(|h| hex::decode(h).unwrap())
        .collect();
    assert_eq!(arrived, payloads.map(<[u8]>::to_vec));

    // fetching at the high watermark is empty, not an error
    let end = reader.watermark("single", 0).await;
    let at_end = call(
        &broker,
        &["fetch", "single", "0", &end.to_string(), "1048576"],
    )
    .await;
    assert!(
        !at_end.contains_key("error") && !at_end.contains_key("record"),
        "{at_end:?}"
    );

    // a truncated tail is dropped rather than returned
    let hundreds: [&[u8]; 3] = [&[b'A'; 100], &[b'B'; 100], &[b'C'; 100]];
    let before = reader.watermark("single", 0).await;
    reader.produce("single", &hundreds).await;
    let cut = call(
        &broker,
        &["fetch", "single", "0", &before.to_string(), "150"],
    )
    .await;
    assert_eq!(cut["record"], vec![hex::encode([b'A'; 100])]);

    // a record too large for maxBytes is reported, not read as the end of the log
    let before = reader.watermark("single", 0).await;
    reader.produce("single", &[&[b'X'; 500]]).await;
    let large = call(
        &broker,
        &["fetch", "single", "0", &before.to_string(), "100"],
    )
    .await;
    assert_eq!(one(&large, "recordExceedsMaxBytes"), "500");
    assert!(!large.contains_key("record"));

    // an offset past the end is refused
    let end = reader.watermark("single", 0).await;
    let past = call(
        &broker,
        &["fetch", "single", "0", &(end + 1000).to_string(), "1048576"],
    )
    .await;
    assert_eq!(one(&past, "error"), "OFFSET_OUT_OF_RANGE");

    broker.stop().await;
}
