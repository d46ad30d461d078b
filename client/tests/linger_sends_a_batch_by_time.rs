//! A batch that never fills is sent when its linger window ends — and the window is counted
//! from the batch's first record, so a steady trickle of records cannot postpone it forever.

mod support;

use std::time::Duration;

use booblik_client::{Client, ProducerConfig};
use booblik_protocol::ApiKey;
use support::{FakeBroker, test_config, within};

#[tokio::test]
async fn records_below_the_batch_size_are_sent_when_the_linger_window_ends() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    let config = ProducerConfig {
        linger_ms: 1_000,
        ..ProducerConfig::default()
    };
    let producer = client.producer("t", config).await.unwrap();

    let first = producer.send_to(0, "a").await.unwrap();
    let second = producer.send_to(0, "b").await.unwrap();
    // No flush: only the linger timer can send them.
    assert_eq!(within("the first delivery", first).await.unwrap(), Some(0));
    assert_eq!(
        within("the second delivery", second).await.unwrap(),
        Some(1)
    );

    let produces = broker.seen_of(ApiKey::Produce);
    assert_eq!(produces.len(), 1, "both records belong in one batch");
    assert_eq!(produces[0].record_count, Some(2));
}

#[tokio::test]
async fn a_steady_trickle_does_not_postpone_the_send() {
    const LINGER_MS: u64 = 200;
    const TRICKLE_INTERVAL_MS: u64 = 20;
    const TRICKLE_RECORDS: usize = 100; // two seconds of trickle, ten linger windows

    let broker = FakeBroker::start(&[("t", 1)]).await;
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    let config = ProducerConfig {
        linger_ms: LINGER_MS,
        ..ProducerConfig::default()
    };
    let producer = client.producer("t", config).await.unwrap();

    let first = producer.send_to(0, "first").await.unwrap();
    let mut first = Box::pin(first);
    let mut resolved_during_trickle = false;
    for i in 0..TRICKLE_RECORDS {
        tokio::time::sleep(Duration::from_millis(TRICKLE_INTERVAL_MS)).await;
        producer.send_to(0, format!("r{i}")).await.unwrap();
        if !resolved_during_trickle {
            resolved_during_trickle = futures::poll!(first.as_mut()).is_ready();
        }
    }
    assert!(
        resolved_during_trickle,
        "the first record waited for the trickle to stop: linger is measured from the last record"
    );
    assert!(broker.seen_of(ApiKey::Produce).len() >= 2);
    producer.flush().await.unwrap();
    assert_eq!(broker.records("t", 0).len(), TRICKLE_RECORDS + 1);
}
