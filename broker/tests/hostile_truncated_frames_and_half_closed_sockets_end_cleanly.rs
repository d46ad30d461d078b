//! A client that goes away in the middle of things — a frame cut by a half-close or a full
//! close, a reset while a large FETCH response is being sent, a half-close behind a long poll —
//! gets every answer it is owed and then a closed connection, and nobody else notices.

mod support;

mod hostile_support;

use std::time::{Duration, Instant};

use booblik_protocol::{LongPoll, MetadataRequest, Request, RequestBody};
use hostile_support::{
    Bystander, Ending, assert_no_panics, assert_serves, drain_until_close, watch_panics,
};
use support::{RawConn, TestBroker, fetch_request};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// Longer than any answer or close may take in these tests.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

fn metadata_frame(correlation_id: i32) -> Vec<u8> {
    let mut out = Vec::new();
    Request {
        correlation_id,
        body: RequestBody::Metadata(MetadataRequest::default()),
    }
    .encode(&mut out);
    out
}

async fn start() -> TestBroker {
    TestBroker::start_with(|config| {
        // Long, so that only the client's close can end these connections in time.
        config.frame_read_timeout_ms = 120_000;
        config.idle_timeout_ms = 120_000;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_cut_by_a_half_close_is_dropped_after_the_whole_requests_before_it_are_answered() {
    watch_panics();
    let broker = start().await;
    let addr = broker.broker.local_addr();
    let bystander = Bystander::start(addr).await;
    let cut_frame = metadata_frame(99);
    // Every place a frame can be cut: inside the length, the header, the body.
    for cut in 1..cut_frame.len() {
        let mut conn = RawConn::connect(addr).await;
        let mut bytes = Vec::new();
        for id in 1..=3 {
            bytes.extend_from_slice(&metadata_frame(id));
        }
        bytes.extend_from_slice(&cut_frame[..cut]);
        conn.send_raw(&bytes).await;
        conn.stream.shutdown().await.unwrap();
        let (answers, ending) = drain_until_close(&mut conn.stream, CLOSE_WAIT).await;
        let ids: Vec<i32> = answers.iter().map(|h| h.correlation_id).collect();
        assert_eq!(ids, vec![1, 2, 3], "cut after {cut} bytes");
        assert_eq!(ending, Ending::Closed, "cut after {cut} bytes");
    }
    bystander.finish().await;
    assert_serves(&broker).await;
    assert_no_panics();
}

/// Makes dropping `stream` send a reset instead of a normal close.
// tokio deprecates `set_linger` because a non-zero linger blocks the dropping thread; a zero
// linger never blocks (the close is an immediate reset), which is exactly what is wanted here.
#[allow(deprecated)]
fn reset_on_close(stream: &TcpStream) {
    stream.set_linger(Some(Duration::ZERO)).unwrap();
}

/// Clients of each kind that vanish.
const VANISHING_ROUNDS: usize = 50;
/// Connection slots in the vanishing-clients test: room for every client at once, so that no
/// connection is evicted (at the limit the longest-idle one would be, and the bystander is idle
/// between its round trips); that the sessions of vanished clients end is checked by counting
/// the open connections.
const VANISHING_MAX_CONNECTIONS: usize = 2 * VANISHING_ROUNDS + 2;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_vanish_mid_frame_or_mid_response_do_not_disturb_others() {
    watch_panics();
    let broker = TestBroker::start_with(|config| {
        config.frame_read_timeout_ms = 120_000;
        config.idle_timeout_ms = 120_000;
        config.max_connections = VANISHING_MAX_CONNECTIONS;
    })
    .await;
    let addr = broker.broker.local_addr();
    {
        // A FETCH response of about 512 KiB, far more than one socket write.
        let mut producer = RawConn::connect(addr).await;
        let record = vec![0x5Au8; 64 * 1024];
        for _ in 0..8 {
            producer.produce("solo", 0, &[&record]).await;
        }
    }
    let bystander = Bystander::start(addr).await;
    let mut fetch = Vec::new();
    fetch_request(2, "solo", 0, 0, 1024 * 1024, None).encode(&mut fetch);
    for round in 0..VANISHING_ROUNDS {
        // Half a frame, then a full close; every other round a reset (linger 0). Write errors
        // are ignored: a client beyond the limit is closed before it writes.
        let mut vanishing = TcpStream::connect(addr).await.unwrap();
        if round % 2 == 0 {
            reset_on_close(&vanishing);
        }
        let _ = vanishing.write_all(&metadata_frame(1)[..7]).await;
        drop(vanishing);
        // A large FETCH, then a reset before reading a byte of the answer.
        let mut resetting = TcpStream::connect(addr).await.unwrap();
        reset_on_close(&resetting);
        let _ = resetting.write_all(&fetch).await;
        drop(resetting);
    }
    let report = bystander.finish().await;
    eprintln!(
        "{} vanishing clients; bystander: {} round trips, slowest {:?}",
        2 * VANISHING_ROUNDS,
        report.round_trips,
        report.slowest
    );
    // Every session of a vanished client must end and give its slot back; give the last few a
    // moment to notice.
    let deadline = Instant::now() + CLOSE_WAIT;
    loop {
        let open = broker.broker.open_connections();
        if open == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{open} connections still open: sessions of vanished clients are still running"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_serves(&broker).await;
    assert_no_panics();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_close_behind_a_long_poll_gets_the_answer_at_the_deadline_then_the_close() {
    watch_panics();
    let broker = start().await;
    let mut conn = broker.connect().await;
    let poll = LongPoll {
        max_wait_ms: 300,
        min_bytes: 1,
    };
    conn.send(&fetch_request(7, "solo", 0, 0, 4096, Some(poll)))
        .await;
    conn.stream.shutdown().await.unwrap();
    let (answers, ending) = drain_until_close(&mut conn.stream, CLOSE_WAIT).await;
    assert_eq!(answers.len(), 1, "the long poll was answered");
    assert_eq!(answers[0].correlation_id, 7);
    assert_eq!(ending, Ending::Closed);
    assert_serves(&broker).await;
    assert_no_panics();
}
