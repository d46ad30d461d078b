//! Keyed records land on the partition the cross-language golden vectors specify, read through
//! the partition count METADATA reports — and the record is really there, not only reported so.

mod support;

use booblik_client::{Client, ProducerConfig};
use support::{FakeBroker, test_config, within};

const VECTORS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../broker/protocol/tests/vectors/partitioner-fnv1a.tsv"
);

struct Vector {
    name: String,
    key: Vec<u8>,
    p3: i32,
    p4: i32,
}

/// `#` lines are comments, the last of them the header; hex fields; the empty key is an empty
/// leading field.
fn vectors() -> Vec<Vector> {
    let text = std::fs::read_to_string(VECTORS).expect("golden vectors");
    let mut header: Vec<String> = Vec::new();
    let mut rows = Vec::new();
    for line in text.lines() {
        if let Some(comment) = line.strip_prefix('#') {
            header = comment.trim().split('\t').map(str::to_owned).collect();
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        let column = |name: &str| fields[header.iter().position(|h| h == name).unwrap()];
        rows.push(Vector {
            name: column("name").to_owned(),
            key: hex::decode(column("keyHex")).unwrap(),
            p3: column("p3").parse().unwrap(),
            p4: column("p4").parse().unwrap(),
        });
    }
    assert!(rows.len() >= 10, "too few vectors read from {VECTORS}");
    rows
}

#[tokio::test]
async fn every_golden_key_lands_on_its_partition_for_three_and_four_partitions() {
    let broker = FakeBroker::start(&[("three", 3), ("four", 4)]).await;
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();

    for (topic, count) in [("three", 3), ("four", 4)] {
        let producer = client
            .producer(topic, ProducerConfig::default())
            .await
            .unwrap();
        assert_eq!(producer.topic().partition_count(), count);
        for vector in vectors() {
            let expected = if count == 3 { vector.p3 } else { vector.p4 };
            let mut payload = b"keyed:".to_vec();
            payload.extend_from_slice(&vector.key);
            let delivery = producer
                .send(Some(&vector.key), payload.clone())
                .await
                .unwrap();
            assert_eq!(
                delivery.partition(),
                expected,
                "key «{}» with {count} partitions",
                vector.name
            );
            within("a keyed delivery", delivery).await.unwrap();
            assert!(
                broker.records(topic, expected).contains(&payload),
                "key «{}» was reported on partition {expected} but is not there",
                vector.name
            );
        }
    }
}
