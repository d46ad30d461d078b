//! A record is read whole or not at all, so the largest record is the largest FETCH payload
//! minus its 8-byte header (`MAX_RECORD_PAYLOAD_BYTES`). A PRODUCE to a one-character topic has
//! room for a payload 2 bytes larger; the producer refuses one before sending, because no
//! consumer could ever read it back. A record of exactly the limit goes out and is read back
//! whole.

mod support;

use booblik_client::connection::MAX_FETCH_BYTES;
use booblik_client::{ClientError, ConsumerConfig, StartPosition};
use booblik_protocol::{ApiKey, MAX_RECORD_PAYLOAD_BYTES};
use support::{FakeBroker, client_and_producer, within};

#[tokio::test]
async fn the_largest_fetchable_record_is_sent_and_read_back_and_one_byte_more_is_refused() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    let (client, producer) = client_and_producer(&broker, "t").await;

    let error = producer
        .send_to(0, vec![b'x'; MAX_RECORD_PAYLOAD_BYTES + 1])
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            ClientError::RecordTooLarge { size, max: MAX_RECORD_PAYLOAD_BYTES }
                if size == MAX_RECORD_PAYLOAD_BYTES + 1
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("FETCH"), "{error}");

    let largest = vec![b'y'; MAX_RECORD_PAYLOAD_BYTES];
    let delivery = producer.send_to(0, largest.clone()).await.unwrap();
    assert_eq!(within("the delivery", delivery).await.unwrap(), Some(0));
    let produces = broker.seen_of(ApiKey::Produce);
    assert_eq!(produces.len(), 1, "the refused record was sent");
    assert_eq!(produces[0].payloads[0].len(), MAX_RECORD_PAYLOAD_BYTES);

    let config = ConsumerConfig {
        max_bytes: MAX_FETCH_BYTES,
        ..ConsumerConfig::default()
    };
    let mut replay = client
        .consumer("t", 0, StartPosition::Earliest, config)
        .await
        .unwrap()
        .replay()
        .await
        .unwrap();
    let batch = within("the replay", replay.next_batch())
        .await
        .unwrap()
        .expect("one batch");
    assert_eq!(batch.records.len(), 1);
    assert_eq!(batch.records[0].payload.len(), MAX_RECORD_PAYLOAD_BYTES);
    assert!(batch.records[0].payload == largest, "the payload changed");
}
