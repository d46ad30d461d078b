//! A client that pipelines requests without ever reading the answers cannot make the broker
//! buffer without bound: once the answers back up, the session stops reading (so the client's
//! own writes block), and after `write_timeout_ms` without progress the connection is closed.
//! Meanwhile other clients are served as usual: one stuck session holds up nobody else.
//!
//! Why the client's writes must block: a session reads at most one frame plus one 64 KiB read
//! (`READ_CHUNK_BYTES` in `src/server/session.rs`) ahead, serves requests one at a time, and
//! writes answers before reading more. With the answers stuck, nothing is read; the kernel
//! buffers between the two fill up, and then the client's `write` waits. Had the broker kept
//! reading and queueing answers in memory, the client could write the whole
//! [`FLOOD_LIMIT_BYTES`] without ever waiting.
//!
//! Both answer paths are covered: small gathered answers (METADATA, written from the session's
//! buffer) and large FETCH payloads (written with `sendfile`).

mod support;

mod hostile_support;

use std::time::{Duration, Instant};

use booblik_protocol::{MetadataRequest, Request, RequestBody};
use hostile_support::{
    Bystander, FloodEnd, assert_no_panics, assert_serves, watch_panics, write_until_blocked,
};
use support::{TestBroker, fetch_request};
use tokio::net::TcpStream;

/// The broker gives up on a stuck answer after this long.
const WRITE_TIMEOUT_MS: u64 = 4_000;
/// Frame and idle timers far beyond the test, so only the write timeout can close the flood.
const OTHER_TIMEOUTS_MS: u64 = 120_000;
/// The flood gives up (and the test fails) after writing this much without being blocked.
const FLOOD_LIMIT_BYTES: u64 = 256 * 1024 * 1024;
/// A write that makes no progress for this long counts as blocked.
const STALL: Duration = Duration::from_secs(1);
/// After the flood is blocked, the close must come within the write timeout plus this.
const CLOSE_SLACK: Duration = Duration::from_secs(10);

/// What a flood achieved.
#[derive(Debug)]
struct Flood {
    /// Request bytes the client managed to write before its writes blocked.
    written_bytes: u64,
    /// Requests those bytes hold.
    requests: u64,
    /// From the first byte sent to the connection failing.
    closed_after: Duration,
}

/// Floods `request` without reading until writes block; then waits for the broker to close
/// the connection. Fails the test if either does not happen.
async fn flood_without_reading(addr: std::net::SocketAddr, request: &[u8]) -> Flood {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let started = Instant::now();
    let (end, written_bytes) =
        write_until_blocked(&mut stream, request, STALL, FLOOD_LIMIT_BYTES).await;
    assert_eq!(
        end,
        FloodEnd::Blocked,
        "after {written_bytes} bytes the flood was not blocked: the broker kept reading"
    );
    // The broker must now close the connection, which fails a write.
    let deadline = Instant::now() + Duration::from_millis(WRITE_TIMEOUT_MS) + CLOSE_SLACK;
    let (end, _) = write_until_blocked(
        &mut stream,
        request,
        deadline.saturating_duration_since(Instant::now()),
        u64::MAX,
    )
    .await;
    assert_eq!(
        end,
        FloodEnd::Failed,
        "the stuck connection was not closed within {CLOSE_SLACK:?} after the write timeout"
    );
    Flood {
        written_bytes,
        requests: written_bytes / request.len() as u64,
        closed_after: started.elapsed(),
    }
}

async fn check_flood(broker: &TestBroker, request: &[u8], what: &str) {
    let addr = broker.broker.local_addr();
    let bystander = Bystander::start(addr).await;
    let flood = flood_without_reading(addr, request).await;
    let report = bystander.finish().await;
    eprintln!(
        "{what}: writes blocked after {} bytes ({} requests); closed {:?} after the flood began \
         (write_timeout_ms = {WRITE_TIMEOUT_MS}); bystander: {} round trips, slowest {:?}",
        flood.written_bytes, flood.requests, flood.closed_after, report.round_trips, report.slowest
    );
    // The close is the write timeout's, which cannot fire before the flood has lasted that long.
    assert!(flood.closed_after >= Duration::from_millis(WRITE_TIMEOUT_MS));
    // Had the bystander waited behind the stuck session, one round trip would have taken the
    // whole write timeout.
    assert!(
        report.slowest < Duration::from_millis(WRITE_TIMEOUT_MS),
        "a bystander round trip took {:?}: it waited behind the stuck session",
        report.slowest
    );
    assert_serves(broker).await;
    assert_no_panics();
}

async fn start() -> TestBroker {
    TestBroker::start_with(|config| {
        config.write_timeout_ms = WRITE_TIMEOUT_MS;
        config.frame_read_timeout_ms = OTHER_TIMEOUTS_MS;
        config.idle_timeout_ms = OTHER_TIMEOUTS_MS;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_small_requests_blocks_the_client_and_is_cut_off_after_the_write_timeout() {
    watch_panics();
    let broker = start().await;
    let mut metadata = Vec::new();
    Request {
        correlation_id: 1,
        body: RequestBody::Metadata(MetadataRequest::default()),
    }
    .encode(&mut metadata);
    check_flood(&broker, &metadata, "METADATA flood").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_large_fetches_blocks_the_client_and_is_cut_off_after_the_write_timeout() {
    watch_panics();
    let broker = start().await;
    // 256 KiB in `solo`, so every FETCH answer is 256 KiB sent with sendfile.
    let mut producer = broker.connect().await;
    let record = vec![0x33u8; 32 * 1024];
    for _ in 0..8 {
        producer.produce("solo", 0, &[&record]).await;
    }
    let mut fetch = Vec::new();
    fetch_request(1, "solo", 0, 0, 1024 * 1024, None).encode(&mut fetch);
    check_flood(&broker, &fetch, "FETCH flood").await;
}
