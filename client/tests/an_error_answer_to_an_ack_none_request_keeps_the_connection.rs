//! The broker still answers an `ack = NONE` PRODUCE it refuses while routing (an unknown
//! partition). That answer carries the refused request's correlationId; it must be recognised,
//! counted and logged — not mistaken for an out-of-order answer that kills the connection.

mod support;

use booblik_client::{AckPolicy, Connection};
use booblik_protocol::{RecordSet, TopicName};
use support::{FakeBroker, test_config, within};

#[tokio::test]
async fn a_refused_none_produce_is_counted_and_the_next_request_still_works() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    let connection = Connection::connect(&broker.addr(), test_config())
        .await
        .unwrap();
    let topic = TopicName::new("t").unwrap();
    let records = RecordSet::from_payloads([b"lost".as_slice()]).unwrap();

    let refused = connection
        .produce(&topic, 7, AckPolicy::None, records)
        .await;
    assert_eq!(refused.unwrap(), None, "the caller is told \"written\"");
    let metadata = within("metadata after the refusal", connection.metadata(&[topic]))
        .await
        .unwrap();

    assert_eq!(metadata.topics.len(), 1);
    assert!(!connection.is_closed());
    assert_eq!(connection.none_refusals(), 1);
}
