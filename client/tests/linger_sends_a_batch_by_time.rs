//! A batch that never fills is sent when its linger window ends — and the window is counted
//! from the batch's first record, so a steady trickle of records cannot postpone it forever.
//!
//! The rules themselves are tested clock-free in `producer/accumulator.rs` (deadline from the
//! first record, never moved by later ones); these tests check that the producer's task acts on
//! them, with short windows and no upper bounds on time, so a slow machine cannot fail them.

mod support;

use std::time::Duration;

use booblik_client::{Client, ProducerConfig};
use booblik_protocol::ApiKey;
use support::{FakeBroker, test_config, within};
use tokio::time::Instant;

const LINGER_MS: u64 = 200;

#[tokio::test]
async fn records_below_the_batch_size_are_sent_when_the_linger_window_ends() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    let config = ProducerConfig {
        linger_ms: LINGER_MS,
        ..ProducerConfig::default()
    };
    let producer = client.producer("t", config).await.unwrap();

    let before_first = Instant::now();
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
    // Not before the window ended (timers never fire early, so this cannot flake).
    assert!(
        produces[0].at - before_first >= Duration::from_millis(LINGER_MS),
        "sent {:?} after the first record, before the {LINGER_MS} ms linger window ended",
        produces[0].at - before_first
    );
}

#[tokio::test]
async fn a_steady_trickle_does_not_postpone_the_send() {
    // Far shorter than the window: measured from the last record, it would never end.
    const TRICKLE_INTERVAL_MS: u64 = 10;

    let broker = FakeBroker::start(&[("t", 1)]).await;
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    let config = ProducerConfig {
        linger_ms: LINGER_MS,
        ..ProducerConfig::default()
    };
    let producer = client.producer("t", config).await.unwrap();

    let mut first = Box::pin(producer.send_to(0, "first").await.unwrap());
    let mut trickled = 0;
    // Keep trickling until the first record is delivered; if the trickle postponed the send,
    // that never happens and `within` fails the test.
    let delivered = within("the first delivery while records keep arriving", async {
        loop {
            tokio::select! {
                biased;
                delivered = first.as_mut() => return delivered,
                () = tokio::time::sleep(Duration::from_millis(TRICKLE_INTERVAL_MS)) => {
                    producer.send_to(0, format!("r{trickled}")).await.unwrap();
                    trickled += 1;
                }
            }
        }
    })
    .await;
    assert_eq!(delivered.unwrap(), Some(0));
    assert!(trickled > 0, "no record arrived while the first one waited");

    producer.flush().await.unwrap();
    assert_eq!(broker.records("t", 0).len(), trickled + 1);
}
