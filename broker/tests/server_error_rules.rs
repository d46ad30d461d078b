//! Each error rule of SPEC §2, seen from a raw socket: which code, which correlationId, and
//! whether the connection survives.

mod support;

use booblik_protocol::{ErrorCode, MAX_FRAME_BYTES};
use support::{RawConn, TestBroker, raw_frame};

/// `u16 len, name` for a topic.
fn name(topic: &str) -> Vec<u8> {
    let mut out = (topic.len() as u16).to_be_bytes().to_vec();
    out.extend_from_slice(topic.as_bytes());
    out
}

/// PRODUCE v1 body with the given ack byte and records (sizes as given, then the bytes).
fn produce_body(topic: &str, partition: i32, ack: i8, records: &[(i32, &[u8])]) -> Vec<u8> {
    let mut b = name(topic);
    b.extend_from_slice(&partition.to_be_bytes());
    b.push(ack as u8);
    b.extend_from_slice(&(records.len() as i32).to_be_bytes());
    for (size, bytes) in records {
        b.extend_from_slice(&size.to_be_bytes());
        b.extend_from_slice(bytes);
    }
    b
}

fn fetch_body(
    topic: &str,
    partition: i32,
    offset: i64,
    max_bytes: i32,
    v2: Option<(i32, i32)>,
) -> Vec<u8> {
    let mut b = name(topic);
    b.extend_from_slice(&partition.to_be_bytes());
    b.extend_from_slice(&offset.to_be_bytes());
    b.extend_from_slice(&max_bytes.to_be_bytes());
    if let Some((wait, min)) = v2 {
        b.extend_from_slice(&wait.to_be_bytes());
        b.extend_from_slice(&min.to_be_bytes());
    }
    b
}

/// Sends `frame`, expects `code` echoing `correlation_id`, then proves the connection still
/// serves a valid request.
async fn answered_and_still_open(
    conn: &mut RawConn,
    frame: &[u8],
    correlation_id: i32,
    code: ErrorCode,
) {
    conn.send_raw(frame).await;
    let response = conn.recv().await;
    assert_eq!(response.header.error_code, code, "frame {frame:02x?}");
    assert_eq!(response.header.correlation_id, correlation_id);
    assert!(response.body.is_empty(), "an error response has no body");
    conn.metadata(&[]).await.expect_ok();
}

#[tokio::test]
async fn malformed_requests_are_answered_with_their_correlation_id_and_keep_the_connection() {
    let broker = TestBroker::start().await;
    let mut conn = broker.connect().await;
    let cases: Vec<(&str, Vec<u8>, ErrorCode)> = vec![
        (
            "empty record",
            produce_body("events", 0, 1, &[(0, b"")]),
            ErrorCode::CorruptRequest,
        ),
        (
            "recordCount 0",
            produce_body("events", 0, 1, &[]),
            ErrorCode::CorruptRequest,
        ),
        (
            "negative record size",
            produce_body("events", 0, 1, &[(-5, b"")]),
            ErrorCode::CorruptRequest,
        ),
        (
            "size overruns the frame",
            produce_body("events", 0, 1, &[(100, b"abc")]),
            ErrorCode::CorruptRequest,
        ),
        (
            "unknown ackPolicy",
            produce_body("events", 0, 3, &[(1, b"x")]),
            ErrorCode::CorruptRequest,
        ),
        (
            "invalid topic name",
            produce_body("ev/ents", 0, 1, &[(1, b"x")]),
            ErrorCode::CorruptRequest,
        ),
        (
            "unknown topic",
            produce_body("nope", 0, 1, &[(1, b"x")]),
            ErrorCode::UnknownTopicOrPartition,
        ),
        (
            "unknown partition",
            produce_body("events", 3, 1, &[(1, b"x")]),
            ErrorCode::UnknownTopicOrPartition,
        ),
    ];
    for (i, (what, body, code)) in cases.into_iter().enumerate() {
        let id = 1000 + i as i32;
        eprintln!("case: {what}");
        answered_and_still_open(&mut conn, &raw_frame(1, 1, id, &body), id, code).await;
    }
    let fetches: Vec<(&str, Vec<u8>, i16)> = vec![
        (
            "negative fetchOffset",
            fetch_body("events", 0, -1, 100, None),
            1,
        ),
        ("maxBytes 0", fetch_body("events", 0, 0, 0, None), 1),
        (
            "negative maxWait",
            fetch_body("events", 0, 0, 100, Some((-1, 0))),
            2,
        ),
        (
            "negative minBytes",
            fetch_body("events", 0, 0, 100, Some((0, -1))),
            2,
        ),
        (
            "minBytes > maxBytes",
            fetch_body("events", 0, 0, 100, Some((0, 101))),
            2,
        ),
        (
            "v1 body sent as v2",
            fetch_body("events", 0, 0, 100, None),
            2,
        ),
    ];
    for (i, (what, body, version)) in fetches.into_iter().enumerate() {
        let id = 2000 + i as i32;
        eprintln!("case: {what}");
        answered_and_still_open(
            &mut conn,
            &raw_frame(2, version, id, &body),
            id,
            ErrorCode::CorruptRequest,
        )
        .await;
    }
}

#[tokio::test]
async fn unknown_api_keys_and_versions_are_unsupported_with_the_request_correlation_id() {
    let broker = TestBroker::start().await;
    let mut conn = broker.connect().await;
    for (api, version) in [(0i16, 1i16), (4, 1), (1, 2), (2, 3), (3, 0), (-1, -1)] {
        let id = 31 + i32::from(api);
        answered_and_still_open(
            &mut conn,
            &raw_frame(api, version, id, b"whatever"),
            id,
            ErrorCode::UnsupportedVersion,
        )
        .await;
    }
}

#[tokio::test]
async fn a_frame_shorter_than_the_header_is_corrupt_with_correlation_id_zero() {
    let broker = TestBroker::start().await;
    let mut conn = broker.connect().await;
    // len = 5: apiKey, apiVersion and one byte of correlationId.
    let frame = [0, 0, 0, 5, 0, 3, 0, 1, 9];
    answered_and_still_open(&mut conn, &frame, 0, ErrorCode::CorruptRequest).await;
}

#[tokio::test]
async fn frame_lengths_out_of_range_close_the_connection_without_an_answer() {
    let broker = TestBroker::start().await;
    for len in [0i32, -1, (MAX_FRAME_BYTES + 1) as i32] {
        let mut conn = broker.connect().await;
        conn.send_raw(&len.to_be_bytes()).await;
        assert!(conn.closed_without_answer().await, "length {len}");
    }
    // The broker itself is fine.
    broker.connect().await.metadata(&[]).await.expect_ok();
}

#[tokio::test]
async fn requests_before_a_bad_length_are_still_answered() {
    let broker = TestBroker::start().await;
    let mut conn = broker.connect().await;
    let mut bytes = raw_frame(3, 1, 77, &0i32.to_be_bytes());
    bytes.extend_from_slice(&(-7i32).to_be_bytes());
    conn.send_raw(&bytes).await;
    let response = conn.recv().await;
    assert_eq!(response.header.correlation_id, 77);
    response.expect_ok();
    assert!(conn.closed_without_answer().await);
}
