//! A batch that reaches `max_batch_bytes` goes out at once, however long the linger window.

mod support;

use booblik_client::{Client, ProducerConfig};
use booblik_protocol::ApiKey;
use support::{FakeBroker, test_config, within};

const PAYLOAD: &[u8] = b"0123456789";
/// Three records: each is an `int32 size` plus the payload on the wire.
const BATCH_BYTES: usize = 3 * (4 + PAYLOAD.len());

#[tokio::test]
async fn a_full_batch_is_sent_although_linger_is_an_hour() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    let config = ProducerConfig {
        linger_ms: 60 * 60 * 1000,
        max_batch_bytes: BATCH_BYTES,
        ..ProducerConfig::default()
    };
    let producer = client.producer("t", config).await.unwrap();

    let mut deliveries = Vec::new();
    for _ in 0..3 {
        deliveries.push(producer.send_to(0, PAYLOAD).await.unwrap());
    }
    let offsets = within("a full batch", futures::future::join_all(deliveries)).await;
    let offsets: Vec<Option<i64>> = offsets.into_iter().map(Result::unwrap).collect();
    assert_eq!(offsets, vec![Some(0), Some(1), Some(2)]);
    let produces = broker.seen_of(ApiKey::Produce);
    assert_eq!(produces.len(), 1);
    assert_eq!(produces[0].record_count, Some(3));

    // A fourth record waits for its batch to fill or for a flush.
    let fourth = producer.send_to(0, PAYLOAD).await.unwrap();
    producer.flush().await.unwrap();
    assert_eq!(within("the flushed record", fourth).await.unwrap(), Some(3));
    assert_eq!(broker.seen_of(ApiKey::Produce).len(), 2);
}
