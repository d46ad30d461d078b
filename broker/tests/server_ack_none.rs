//! PRODUCE with ack NONE answers nothing, unless the request is refused.

mod support;

use booblik_protocol::{AckPolicy, ErrorCode};
use support::{TestBroker, produce_request};

#[tokio::test]
async fn ack_none_answers_nothing_but_appends_in_order() {
    let broker = TestBroker::start().await;
    let mut conn = broker.connect().await;
    for i in 0..10 {
        conn.send(&produce_request(
            i,
            "solo",
            0,
            AckPolicy::None,
            &[format!("n{i}").as_bytes()],
        ))
        .await;
    }
    // The next answer on the wire is the METADATA's: nothing was sent for the ten produces.
    let meta = conn.metadata(&["solo"]).await.metadata();
    assert!(meta.topics[0].partitions[0].high_watermark <= 10);
    // A WRITTEN produce after them lands after them (same queue, same order).
    let written = conn.produce("solo", 0, &[b"after"]).await;
    assert_eq!(written.base_offset, 10);
    let fetched = support::payloads(&conn.fetch("solo", 0, 0, 4096).await.fetch());
    let expected: Vec<Vec<u8>> = (0..10)
        .map(|i| format!("n{i}").into_bytes())
        .chain([b"after".to_vec()])
        .collect();
    assert_eq!(fetched, expected);
}

#[tokio::test]
async fn ack_none_to_an_unknown_partition_is_still_answered() {
    let broker = TestBroker::start().await;
    let mut conn = broker.connect().await;
    conn.send(&produce_request(5, "solo", 9, AckPolicy::None, &[b"x"]))
        .await;
    let response = conn.recv().await;
    assert_eq!(response.header.correlation_id, 5);
    assert_eq!(
        response.header.error_code,
        ErrorCode::UnknownTopicOrPartition
    );
}

#[tokio::test]
async fn ack_none_with_a_record_too_large_is_answered() {
    let broker = TestBroker::start().await;
    let mut conn = broker.connect().await;
    // Segments are 1 MiB: a 1 MiB payload plus its 8-byte header cannot fit an empty one.
    let big = vec![7u8; 1024 * 1024];
    conn.send(&produce_request(6, "solo", 0, AckPolicy::None, &[&big]))
        .await;
    let response = conn.recv().await;
    assert_eq!(response.header.correlation_id, 6);
    assert_eq!(response.header.error_code, ErrorCode::RecordTooLarge);
}
