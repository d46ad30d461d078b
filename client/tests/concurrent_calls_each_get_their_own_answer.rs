//! Fifty calls at once on one connection: each caller gets the answer to its own request.
//! Answers are matched by position in a FIFO and checked by correlationId, and ids come from an
//! atomic counter, so concurrent callers can neither share an id nor swap answers.

mod support;

use std::collections::HashSet;

use booblik_client::{Batch, Connection};
use booblik_protocol::{ApiKey, FetchRequest, TopicName};
use support::{FakeBroker, test_config, within};

const CALLS: i64 = 50;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_fetches_on_one_connection_each_get_their_own_record() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    let payloads: Vec<Vec<u8>> = (0..CALLS)
        .map(|i| format!("record-{i}").into_bytes())
        .collect();
    let refs: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
    broker.append("t", 0, &refs);

    let connection = Connection::connect(&broker.addr(), test_config())
        .await
        .unwrap();
    let topic = TopicName::new("t").unwrap();
    let calls = (0..CALLS).map(|offset| {
        let connection = connection.clone();
        let topic = topic.clone();
        tokio::spawn(async move {
            let request = FetchRequest {
                topic: topic.clone(),
                partition: 0,
                fetch_offset: offset,
                max_bytes: 64, // room for one record only
                long_poll: None,
            };
            let response = connection.fetch(request).await.unwrap();
            let batch = Batch::from_fetch(&topic, 0, offset, 64, response).unwrap();
            (offset, batch)
        })
    });
    let results = within("fifty fetches", futures::future::join_all(calls)).await;

    for result in results {
        let (offset, batch) = result.unwrap();
        let first = &batch.records[0];
        assert_eq!(first.offset, offset);
        assert_eq!(
            first.payload,
            format!("record-{offset}").as_bytes(),
            "the caller fetching offset {offset} got someone else's answer"
        );
    }
    let ids: HashSet<i32> = broker
        .seen_of(ApiKey::Fetch)
        .iter()
        .map(|s| s.correlation_id)
        .collect();
    assert_eq!(ids.len(), CALLS as usize, "correlation ids were reused");
}
