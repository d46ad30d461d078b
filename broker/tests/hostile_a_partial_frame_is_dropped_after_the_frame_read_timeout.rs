//! A frame that starts arriving must be complete within `frame_read_timeout_ms` (the slow-loris
//! guard): a client that sends part of a frame and stops, or trickles bytes so slowly that the
//! frame would take minutes, is closed at the frame deadline — counted from the frame's first
//! byte, so trickling does not extend it. A connection that is merely quiet *between* frames is
//! not subject to that timer (only to the much longer idle timeout).

mod support;

mod hostile_support;

use std::time::{Duration, Instant};

use booblik_protocol::{MetadataRequest, Request, RequestBody};
use hostile_support::{
    Bystander, Ending, assert_no_panics, assert_serves, drain_until_close, watch_panics,
};
use support::TestBroker;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// The frame deadline in these tests.
const FRAME_READ_TIMEOUT_MS: u64 = 400;
/// The idle timeout: far longer, so a close near the frame deadline is the frame timer's.
const IDLE_TIMEOUT_MS: u64 = 120_000;
/// How long the tests wait for a close the frame timer must cause.
const CLOSE_WAIT: Duration = Duration::from_secs(15);
/// Slow-loris clients trickling at once.
const TRICKLERS: usize = 32;
/// Pause between two trickled bytes: the frame below would take 50 s at this pace.
const TRICKLE_PAUSE_MS: u64 = 50;
/// Length the trickled frame declares.
const TRICKLED_FRAME_BYTES: usize = 1000;

async fn start() -> TestBroker {
    TestBroker::start_with(|config| {
        config.frame_read_timeout_ms = FRAME_READ_TIMEOUT_MS;
        config.idle_timeout_ms = IDLE_TIMEOUT_MS;
    })
    .await
}

fn metadata_frame(correlation_id: i32) -> Vec<u8> {
    let mut out = Vec::new();
    Request {
        correlation_id,
        body: RequestBody::Metadata(MetadataRequest::default()),
    }
    .encode(&mut out);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_that_never_completes_is_dropped_at_the_frame_deadline() {
    watch_panics();
    let broker = start().await;
    let mut conn = broker.connect().await;
    // A whole request first (answered), then 10 bytes of a frame that declares 100.
    let mut bytes = metadata_frame(1);
    bytes.extend_from_slice(&100i32.to_be_bytes());
    bytes.extend_from_slice(&[0u8; 6]);
    let started = Instant::now();
    conn.send_raw(&bytes).await;
    let (answers, ending) = drain_until_close(&mut conn.stream, CLOSE_WAIT).await;
    let waited = started.elapsed();
    assert_eq!(answers.len(), 1, "the whole request before it was answered");
    assert_eq!(
        ending,
        Ending::Closed,
        "the partial frame was never dropped"
    );
    assert!(
        waited >= Duration::from_millis(FRAME_READ_TIMEOUT_MS),
        "closed after {waited:?}, before the frame deadline"
    );
    eprintln!(
        "partial frame dropped after {waited:?} (frame_read_timeout_ms = {FRAME_READ_TIMEOUT_MS})"
    );
    assert_serves(&broker).await;
    assert_no_panics();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_loris_clients_are_dropped_at_the_frame_deadline_while_others_are_served() {
    watch_panics();
    let broker = start().await;
    let addr = broker.broker.local_addr();
    let bystander = Bystander::start(addr).await;
    let tricklers: Vec<_> = (0..TRICKLERS)
        .map(|_| {
            tokio::spawn(async move {
                let mut stream = TcpStream::connect(addr).await.unwrap();
                let mut frame = (TRICKLED_FRAME_BYTES as i32).to_be_bytes().to_vec();
                frame.resize(4 + TRICKLED_FRAME_BYTES, 0);
                let started = Instant::now();
                let mut sent = 0;
                for byte in &frame {
                    if stream.write_all(std::slice::from_ref(byte)).await.is_err() {
                        break;
                    }
                    sent += 1;
                    tokio::time::sleep(Duration::from_millis(TRICKLE_PAUSE_MS)).await;
                    if started.elapsed() > CLOSE_WAIT {
                        break;
                    }
                }
                (started.elapsed(), sent, frame.len())
            })
        })
        .collect();
    for trickler in tricklers {
        let (elapsed, sent, frame_bytes) = trickler.await.unwrap();
        // A write fails only once the broker has closed the connection.
        assert!(
            sent < frame_bytes && elapsed < CLOSE_WAIT,
            "a trickling client was never cut off ({sent} of {frame_bytes} bytes in {elapsed:?})"
        );
        assert!(elapsed >= Duration::from_millis(FRAME_READ_TIMEOUT_MS));
    }
    let report = bystander.finish().await;
    eprintln!(
        "{TRICKLERS} slow-loris clients cut off; bystander: {} round trips, slowest {:?}",
        report.round_trips, report.slowest
    );
    assert_serves(&broker).await;
    assert_no_panics();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_quiet_between_frames_outlives_the_frame_deadline() {
    watch_panics();
    let broker = start().await;
    let mut conn = broker.connect().await;
    conn.metadata(&[]).await.expect_ok();
    tokio::time::sleep(Duration::from_millis(3 * FRAME_READ_TIMEOUT_MS)).await;
    conn.metadata(&[]).await.expect_ok();
    assert_no_panics();
}
