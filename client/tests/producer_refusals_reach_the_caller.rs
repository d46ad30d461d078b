//! Every refusal reaches the caller as a typed error: the ones the client can see itself before
//! sending (empty record, unknown partition), and the ones only the broker can decide
//! (RECORD_TOO_LARGE, an unknown topic).

mod support;

use booblik_client::{Client, ClientError, ErrorCode, ProducerConfig};
use booblik_protocol::ApiKey;
use support::{FakeBroker, client_and_producer, test_config, within};

#[tokio::test]
async fn an_empty_record_is_refused_before_sending() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    let (_client, producer) = client_and_producer(&broker, "t").await;

    let error = producer.send(None, Vec::new()).await.unwrap_err();

    assert!(matches!(error, ClientError::EmptyRecord), "{error:?}");
    producer.flush().await.unwrap();
    assert!(
        broker.seen_of(ApiKey::Produce).is_empty(),
        "an empty record was sent"
    );
}

#[tokio::test]
async fn a_partition_the_topic_lacks_is_refused_before_sending() {
    let broker = FakeBroker::start(&[("t", 2)]).await;
    let (_client, producer) = client_and_producer(&broker, "t").await;

    let error = producer.send_to(5, "x").await.unwrap_err();

    assert!(
        matches!(
            error,
            ClientError::UnknownPartition {
                partition: 5,
                partition_count: 2,
                ..
            }
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_record_too_large_for_the_broker_fails_its_delivery_with_record_too_large() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    broker.set_max_record_bytes(100);
    let (_client, producer) = client_and_producer(&broker, "t").await;

    let delivery = producer.send_to(0, vec![b'x'; 200]).await.unwrap();
    let error = within("the delivery", delivery).await.unwrap_err();

    assert_eq!(error.broker_code(), Some(ErrorCode::RecordTooLarge));
    assert!(broker.records("t", 0).is_empty());
}

#[tokio::test]
async fn a_producer_for_an_unknown_topic_is_refused() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();

    let error = client
        .producer("no-such-topic", ProducerConfig::default())
        .await
        .unwrap_err();

    assert_eq!(
        error.broker_code(),
        Some(ErrorCode::UnknownTopicOrPartition)
    );
}
