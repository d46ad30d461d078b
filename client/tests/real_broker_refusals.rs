//! Against the real broker, each refusal reaches the caller as a typed error: RECORD_TOO_LARGE
//! for a record no segment can hold, OFFSET_OUT_OF_RANGE past the end, UNKNOWN_TOPIC_OR_PARTITION
//! (also answered to `ack = NONE`, without breaking the connection), and a record larger than
//! the consumer's `maxBytes`.

mod support;

use booblik_client::{
    AckPolicy, Client, ClientError, Connection, ConsumerConfig, ErrorCode, ProducerConfig,
    StartPosition,
};
use booblik_protocol::{RecordSet, TopicName};
use support::real_broker::{RealBroker, TEST_SEGMENT_BYTES};
use support::{test_config, within};

#[tokio::test]
async fn a_record_larger_than_a_segment_is_refused_with_record_too_large() {
    let broker = RealBroker::start("events:1").await;
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    let producer = client
        .producer("events", ProducerConfig::default())
        .await
        .unwrap();

    let huge = vec![b'x'; TEST_SEGMENT_BYTES as usize + 1];
    let delivery = producer.send_to(0, huge).await.unwrap();
    let error = within("the refused delivery", delivery).await.unwrap_err();

    assert_eq!(
        error.broker_code(),
        Some(ErrorCode::RecordTooLarge),
        "{error:?}"
    );
    broker.stop().await;
}

#[tokio::test]
async fn an_offset_past_the_end_is_offset_out_of_range() {
    let broker = RealBroker::start("events:1").await;
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    let mut follow = client
        .consumer(
            "events",
            0,
            StartPosition::At(100),
            ConsumerConfig::default(),
        )
        .await
        .unwrap()
        .follow();

    let error = within("a follow", follow.next_batch()).await.unwrap_err();

    assert_eq!(
        error.broker_code(),
        Some(ErrorCode::OffsetOutOfRange),
        "{error:?}"
    );
    broker.stop().await;
}

#[tokio::test]
async fn unknown_partitions_are_refused_and_a_refused_none_keeps_the_connection() {
    let broker = RealBroker::start("events:1").await;
    let connection = Connection::connect(&broker.addr(), test_config())
        .await
        .unwrap();
    let topic = TopicName::new("events").unwrap();
    let records = || RecordSet::from_payloads([b"x".as_slice()]).unwrap();

    let error = connection
        .produce(&topic, 9, AckPolicy::Written, records())
        .await
        .unwrap_err();
    assert_eq!(
        error.broker_code(),
        Some(ErrorCode::UnknownTopicOrPartition)
    );

    let none = connection
        .produce(&topic, 9, AckPolicy::None, records())
        .await;
    assert_eq!(none.unwrap(), None);
    let metadata = within("metadata", connection.metadata(&[topic]))
        .await
        .unwrap();
    assert_eq!(metadata.topics[0].partitions.len(), 1);
    assert_eq!(connection.none_refusals(), 1);
    broker.stop().await;
}

#[tokio::test]
async fn a_record_larger_than_max_bytes_is_reported_not_spun_on() {
    let broker = RealBroker::start("events:1").await;
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    let producer = client
        .producer("events", ProducerConfig::default())
        .await
        .unwrap();
    within(
        "the record",
        producer.send_to(0, vec![b'X'; 500]).await.unwrap(),
    )
    .await
    .unwrap();
    let config = ConsumerConfig {
        max_bytes: 100,
        ..ConsumerConfig::default()
    };
    let mut follow = client
        .consumer("events", 0, StartPosition::Earliest, config)
        .await
        .unwrap()
        .follow();

    let error = within("a follow", follow.next_batch()).await.unwrap_err();

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
    broker.stop().await;
}
