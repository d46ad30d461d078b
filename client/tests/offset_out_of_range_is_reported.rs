//! A position outside the log is OFFSET_OUT_OF_RANGE from the broker: reported to the caller,
//! not retried forever.

mod support;

use booblik_client::{Client, ConsumerConfig, ErrorCode, StartPosition};
use futures::StreamExt;
use support::{FakeBroker, test_config, within};

#[tokio::test]
async fn following_past_the_end_reports_offset_out_of_range_and_the_stream_ends() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    broker.append("t", 0, &[b"a", b"b", b"c"]);
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    let consumer = client
        .consumer("t", 0, StartPosition::At(10), ConsumerConfig::default())
        .await
        .unwrap();
    let mut stream = Box::pin(consumer.follow().into_stream());

    let first = within("the follow stream", stream.next()).await.unwrap();
    let error = first.unwrap_err();
    assert_eq!(error.broker_code(), Some(ErrorCode::OffsetOutOfRange));
    assert!(
        within("the end of the stream", stream.next())
            .await
            .is_none()
    );
}
