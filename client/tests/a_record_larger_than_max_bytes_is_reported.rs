//! A record larger than `maxBytes` comes back as a partial tail with nothing whole before it.
//! Dropping it and asking again would repeat forever, looking exactly like a caught-up
//! consumer; the client reports it instead, naming the record's size and the limit.

mod support;

use booblik_client::{Client, ClientError, ConsumerConfig, StartPosition};
use support::{FakeBroker, test_config, within};

#[tokio::test]
async fn a_five_hundred_byte_record_with_max_bytes_one_hundred_is_an_error_not_a_stall() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    broker.append("t", 0, &[&[b'X'; 500]]);
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    let config = ConsumerConfig {
        max_bytes: 100,
        ..ConsumerConfig::default()
    };

    let replay_consumer = client
        .consumer("t", 0, StartPosition::Earliest, config.clone())
        .await
        .unwrap();
    let mut replay = replay_consumer.replay().await.unwrap();
    let error = within("a replay", replay.next_batch()).await.unwrap_err();
    assert!(
        matches!(
            error,
            ClientError::RecordExceedsMaxBytes {
                size: 500,
                max_bytes: 100,
                offset: 0
            }
        ),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "record of 500 bytes exceeds maxBytes 100"
    );
    assert_eq!(
        replay.position(),
        0,
        "the position must not move past the record"
    );

    let follow_consumer = client
        .consumer("t", 0, StartPosition::Earliest, config)
        .await
        .unwrap();
    let error = within("a follow", follow_consumer.follow().next_batch())
        .await
        .unwrap_err();
    assert!(matches!(
        error,
        ClientError::RecordExceedsMaxBytes { size: 500, .. }
    ));
}
