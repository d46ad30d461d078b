//! A frame length outside `1..=MAX_FRAME_BYTES` (0, negative, 8 MiB + 1, `i32::MAX`) closes
//! the connection at once with no answer — not after a timeout, and without reading the
//! megabytes such a length announces — while a frame of exactly `MAX_FRAME_BYTES` is read whole
//! and answered. Other clients are served throughout.

mod support;

mod hostile_support;

use std::time::{Duration, Instant};

use booblik_protocol::{ErrorCode, MAX_FRAME_BYTES};
use hostile_support::{
    Bystander, Ending, assert_no_panics, assert_serves, drain_until_close, watch_panics,
};
use support::{RawConn, TestBroker, raw_frame};
use tokio::io::AsyncWriteExt;

/// The broker's own timers are set to this, so a close within [`PROMPT_CLOSE`] can only come
/// from the length check.
const BROKER_TIMEOUTS_MS: u64 = 120_000;
/// Far below the broker's timeouts.
const PROMPT_CLOSE: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lengths_out_of_range_close_at_once_and_the_largest_legal_frame_is_answered() {
    watch_panics();
    let broker = TestBroker::start_with(|config| {
        config.frame_read_timeout_ms = BROKER_TIMEOUTS_MS;
        config.idle_timeout_ms = BROKER_TIMEOUTS_MS;
    })
    .await;
    let addr = broker.broker.local_addr();
    let bystander = Bystander::start(addr).await;

    let bad_lengths: [i64; 6] = [
        0,
        -1,
        -(MAX_FRAME_BYTES as i64),
        i64::from(i32::MIN),
        MAX_FRAME_BYTES as i64 + 1,
        i64::from(i32::MAX),
    ];
    for len in bad_lengths {
        let mut conn = RawConn::connect(addr).await;
        // The bad length, then a well-formed METADATA request that must never be answered.
        let mut bytes = (len as i32).to_be_bytes().to_vec();
        bytes.extend_from_slice(&raw_frame(3, 1, 5, &0i32.to_be_bytes()));
        let started = Instant::now();
        conn.stream.write_all(&bytes).await.unwrap();
        let (answers, ending) = drain_until_close(&mut conn.stream, PROMPT_CLOSE).await;
        assert_eq!(
            ending,
            Ending::Closed,
            "length {len} left the connection open"
        );
        assert!(answers.is_empty(), "length {len} was answered: {answers:?}");
        eprintln!(
            "length {len}: closed unanswered after {:?}",
            started.elapsed()
        );
    }

    // Exactly MAX_FRAME_BYTES: a PRODUCE whose one record fills the frame. The frame is legal;
    // the record is larger than a test segment (1 MiB), so the answer is RECORD_TOO_LARGE and
    // the connection stays open.
    let mut body = Vec::new();
    body.extend_from_slice(&4u16.to_be_bytes());
    body.extend_from_slice(b"solo");
    body.extend_from_slice(&0i32.to_be_bytes()); // partition
    body.push(1); // ack WRITTEN
    body.extend_from_slice(&1i32.to_be_bytes()); // one record
    let header_bytes = 8;
    let record_len = MAX_FRAME_BYTES - header_bytes - body.len() - 4;
    body.extend_from_slice(&(record_len as i32).to_be_bytes());
    body.resize(body.len() + record_len, 0xAB);
    let frame = raw_frame(1, 1, 42, &body);
    assert_eq!(
        frame.len(),
        4 + MAX_FRAME_BYTES,
        "the frame is exactly the limit"
    );
    let mut conn = RawConn::connect(addr).await;
    conn.send_raw(&frame).await;
    let answer = conn.recv().await;
    assert_eq!(answer.header.correlation_id, 42);
    assert_eq!(answer.header.error_code, ErrorCode::RecordTooLarge);
    conn.metadata(&[]).await.expect_ok();

    let report = bystander.finish().await;
    eprintln!(
        "bystander: {} round trips, slowest {:?}",
        report.round_trips, report.slowest
    );
    assert_serves(&broker).await;
    assert_no_panics();
    broker.broker.shutdown().await.unwrap();
}
