//! Against the real broker: fifty concurrent calls on one connection each get their own answer,
//! and `ack = NONE` returns without an answer while the record is still written.

mod support;

use std::time::Duration;

use booblik_client::{AckPolicy, Batch, Connection};
use booblik_protocol::{FetchRequest, RecordSet, TopicName};
use support::real_broker::RealBroker;
use support::{test_config, within};

const CALLS: i64 = 50;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_fetches_each_get_their_own_record() {
    let broker = RealBroker::start("events:1").await;
    let connection = Connection::connect(&broker.addr(), test_config())
        .await
        .unwrap();
    let topic = TopicName::new("events").unwrap();
    let payloads: Vec<String> = (0..CALLS).map(|i| format!("record-{i}")).collect();
    let records = RecordSet::from_payloads(payloads.iter().map(String::as_bytes)).unwrap();
    connection
        .produce(&topic, 0, AckPolicy::Written, records)
        .await
        .unwrap();

    let calls = (0..CALLS).map(|offset| {
        let connection = connection.clone();
        let topic = topic.clone();
        tokio::spawn(async move {
            let request = FetchRequest {
                topic: topic.clone(),
                partition: 0,
                fetch_offset: offset,
                max_bytes: 24, // one record of at most 9 bytes plus its header
                long_poll: None,
            };
            let response = connection.fetch(request).await.unwrap();
            Batch::from_fetch(&topic, 0, offset, 24, response).unwrap()
        })
    });
    let batches = within("fifty fetches", futures::future::join_all(calls)).await;

    for (offset, batch) in (0..CALLS).zip(batches) {
        let batch = batch.unwrap();
        assert_eq!(batch.records[0].offset, offset);
        assert_eq!(
            batch.records[0].payload,
            format!("record-{offset}").as_bytes()
        );
    }
    broker.stop().await;
}

#[tokio::test]
async fn an_ack_none_produce_returns_and_the_record_is_written() {
    let broker = RealBroker::start("events:1").await;
    let connection = Connection::connect(&broker.addr(), test_config())
        .await
        .unwrap();
    let topic = TopicName::new("events").unwrap();
    let records = RecordSet::from_payloads([b"unacknowledged".as_slice()]).unwrap();

    let answer = within(
        "an ack=none produce",
        connection.produce(&topic, 0, AckPolicy::None, records),
    )
    .await
    .unwrap();
    assert_eq!(answer, None);

    within("the record to become visible", async {
        loop {
            let metadata = connection
                .metadata(std::slice::from_ref(&topic))
                .await
                .unwrap();
            if metadata.topics[0].partitions[0].high_watermark == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    broker.stop().await;
}
