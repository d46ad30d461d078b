//! `ack = NONE` gets no answer from the broker — not an empty one, nothing. A client that waits
//! for one blocks forever (or takes the next request's answer). The call completes once the
//! request is written, with `None` for the unknown offset.

mod support;

use booblik_client::{AckPolicy, Client, Connection, ProducerConfig};
use booblik_protocol::{RecordSet, TopicName};
use support::{FakeBroker, test_config, within};

#[tokio::test]
async fn a_none_produce_returns_once_written_although_no_answer_ever_comes() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    broker.never_answer();
    let connection = Connection::connect(&broker.addr(), test_config())
        .await
        .unwrap();
    let topic = TopicName::new("t").unwrap();
    let records = RecordSet::from_payloads([b"fire and forget".as_slice()]).unwrap();

    let answer = within(
        "an ack=none produce",
        connection.produce(&topic, 0, AckPolicy::None, records),
    )
    .await
    .unwrap();
    assert_eq!(answer, None);
    // "No acknowledgement" is not "no write": the record still arrives.
    within("the record to arrive", async {
        while broker.records("t", 0).is_empty() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
    assert_eq!(broker.records("t", 0), vec![b"fire and forget".to_vec()]);
}

#[tokio::test]
async fn a_producer_with_ack_none_resolves_deliveries_to_none() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    let config = ProducerConfig {
        ack: AckPolicy::None,
        ..ProducerConfig::default()
    };
    let producer = client.producer("t", config).await.unwrap();
    broker.never_answer();

    let delivery = producer.send(None, "unacknowledged").await.unwrap();
    assert_eq!(
        within("an ack=none delivery", delivery).await.unwrap(),
        None
    );
}
