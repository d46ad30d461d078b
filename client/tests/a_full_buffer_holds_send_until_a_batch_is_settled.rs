//! Backpressure: when records accepted and not yet settled fill `buffer_bytes`, `send` waits,
//! and it goes on exactly when a batch is settled and gives its bytes back.

mod support;

use booblik_client::{Client, ProducerConfig};
use support::{FakeBroker, test_config, within};

const PAYLOAD: &[u8] = b"0123456789";
/// One record on the wire: an `int32 size` plus the payload.
const RECORD_BYTES: usize = 4 + PAYLOAD.len();

// The default current-thread runtime matters here: the producer's task cannot run until the
// test yields, so nothing is sent (or settled) behind the test's back between its steps.
#[tokio::test]
async fn a_send_into_a_full_buffer_waits_for_a_settled_batch() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    let config = ProducerConfig {
        linger_ms: 0,
        buffer_bytes: 2 * RECORD_BYTES,
        ..ProducerConfig::default()
    };
    let producer = client.producer("t", config).await.unwrap();

    let mut first = producer.send_to(0, PAYLOAD).await.unwrap();
    let mut second = producer.send_to(0, PAYLOAD).await.unwrap();
    let mut third = Box::pin(producer.send_to(0, PAYLOAD));
    assert!(
        futures::poll!(&mut third).is_pending(),
        "a send went through a full buffer"
    );
    assert!(futures::poll!(&mut first).is_pending());

    let third = within("the send behind a full buffer", third)
        .await
        .unwrap();
    // Buffer space comes back only after the batch is settled, so by now the first two
    // deliveries are resolved.
    assert!(matches!(
        futures::poll!(&mut first),
        std::task::Poll::Ready(Ok(Some(0)))
    ));
    assert!(matches!(
        futures::poll!(&mut second),
        std::task::Poll::Ready(Ok(Some(1)))
    ));
    producer.flush().await.unwrap();
    assert_eq!(within("the third delivery", third).await.unwrap(), Some(2));
}
