//! Deliveries share their batch's outcome: each must still resolve to the offset of *its*
//! record (the batch's base offset plus its index), across many batches and partitions, in
//! whatever order they are awaited.

mod support;

use booblik_client::{Client, ProducerConfig};
use support::{FakeBroker, test_config, within};

const PARTITIONS: i32 = 3;
const RECORDS: usize = 600;

#[tokio::test]
async fn each_delivery_names_the_offset_its_payload_was_stored_at() {
    let broker = FakeBroker::start(&[("t", PARTITIONS as u32)]).await;
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    let config = ProducerConfig {
        linger_ms: 0,
        // A few dozen records per batch: many batches per partition.
        max_batch_bytes: 512,
        ..ProducerConfig::default()
    };
    let producer = client.producer("t", config).await.unwrap();

    let mut sent = Vec::new();
    for n in 0..RECORDS {
        let payload = format!("record-{n}").into_bytes();
        let delivery = producer.send(None, payload.clone()).await.unwrap();
        sent.push((payload, delivery));
        if n % 97 == 0 {
            tokio::task::yield_now().await; // let batches go out while others fill
        }
    }
    producer.flush().await.unwrap();

    let mut checked = 0;
    for (payload, delivery) in sent.into_iter().rev() {
        let partition = delivery.partition();
        let offset = within("a delivery", delivery)
            .await
            .unwrap()
            .expect("ack = written names an offset");
        let stored = broker.records("t", partition);
        assert_eq!(
            stored[usize::try_from(offset).unwrap()],
            payload,
            "partition {partition} offset {offset} holds another record"
        );
        checked += 1;
    }
    assert_eq!(checked, RECORDS);
    let batches = broker.seen_of(booblik_protocol::ApiKey::Produce).len();
    assert!(
        batches > 2 * PARTITIONS as usize,
        "only {batches} batches: the test needs many"
    );
}
