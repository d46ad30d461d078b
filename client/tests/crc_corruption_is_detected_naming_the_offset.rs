//! On the zero-copy path nobody but the client ever looks at a record's bytes, so the client
//! verifies every CRC-32C and names the offset of a corrupt record.

mod support;

use booblik_client::{Client, ClientError, ConsumerConfig, StartPosition};
use support::{FakeBroker, test_config, within};

#[tokio::test]
async fn a_record_with_a_bad_crc_fails_the_fetch_naming_its_offset() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    broker.append("t", 0, &[b"good-0", b"good-1"]);
    let corrupt = broker.append_with_bad_crc("t", 0, b"flipped");
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    let consumer = client
        .consumer("t", 0, StartPosition::Earliest, ConsumerConfig::default())
        .await
        .unwrap();
    let mut replay = consumer.replay().await.unwrap();

    let error = within("a replay", replay.next_batch()).await.unwrap_err();

    match &error {
        ClientError::CrcMismatch {
            partition, offset, ..
        } => {
            assert_eq!(*partition, 0);
            assert_eq!(*offset, corrupt);
        }
        other => panic!("expected a CRC mismatch, got {other:?}"),
    }
    assert!(error.to_string().contains("at offset 2"), "{error}");
    assert_eq!(
        replay.position(),
        0,
        "nothing of a corrupt answer is consumed"
    );
}
