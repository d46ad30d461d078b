//! A pipelined connection is answered strictly in request order.

mod support;

use booblik_protocol::{AckPolicy, ErrorCode};
use support::{TestBroker, fetch_request, produce_request};
use tokio::io::AsyncWriteExt;

#[tokio::test]
async fn pipelined_requests_are_answered_in_request_order() {
    let broker = TestBroker::start().await;
    let mut conn = broker.connect().await;
    // Correlation ids deliberately not increasing, and a mix of APIs, successes and errors.
    let mut expected = Vec::new();
    let mut bytes = Vec::new();
    for i in 0..300i32 {
        let id = (i * 7919) % 1000 - 500;
        let request = match i % 4 {
            0 => produce_request(
                id,
                "solo",
                0,
                AckPolicy::Written,
                &[format!("r{i}").as_bytes()],
            ),
            1 => fetch_request(id, "solo", 0, 0, 1024, None),
            2 => produce_request(id, "missing", 0, AckPolicy::Written, &[b"x"]),
            _ => produce_request(id, "events", i % 3, AckPolicy::Forced, &[b"y"]),
        };
        request.encode(&mut bytes);
        expected.push((
            id,
            if i % 4 == 2 {
                ErrorCode::UnknownTopicOrPartition
            } else {
                ErrorCode::None
            },
        ));
    }
    // One write: the broker sees the whole pipeline at once.
    conn.send_raw(&bytes).await;
    let mut produced = 0;
    for (id, code) in expected {
        let response = conn.recv().await;
        assert_eq!(
            (response.header.correlation_id, response.header.error_code),
            (id, code)
        );
        if code == ErrorCode::None && response.body.len() == 16 {
            produced += 1;
        }
    }
    assert_eq!(produced, 150, "every produce was answered with offsets");
}

#[tokio::test]
async fn a_half_closed_connection_gets_every_answer_before_the_close() {
    let broker = TestBroker::start().await;
    let mut conn = broker.connect().await;
    let mut bytes = Vec::new();
    for id in 0..50 {
        produce_request(id, "solo", 0, AckPolicy::Written, &[b"z"]).encode(&mut bytes);
    }
    conn.send_raw(&bytes).await;
    conn.stream.shutdown().await.unwrap();
    for id in 0..50 {
        assert_eq!(conn.recv().await.produce().base_offset, i64::from(id));
    }
    assert!(conn.closed_without_answer().await);
}
