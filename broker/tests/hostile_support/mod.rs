//! Helpers for the `hostile_*` tests: what every attack test checks *around* the attack.
//!
//! An attack is only survived if three things hold afterwards, whatever the attacker got:
//!
//! 1. **Nothing panicked.** The broker runs in-process, inside tokio tasks, and tokio turns a
//!    panicking session task into a silently dropped connection. So [`watch_panics`] installs a
//!    panic hook that counts every panic on every thread of the test process, and
//!    [`assert_no_panics`] fails the test if the count moved.
//! 2. **Everyone else was served meanwhile.** A [`Bystander`] is a well-behaved client that
//!    keeps producing and fetching on its own connection during the attack, and reports how many
//!    round trips it completed and the slowest one.
//! 3. **The broker still works.** [`assert_serves`] opens a fresh connection and checks that a
//!    produced record is read back byte for byte.
#![allow(dead_code)] // each test file uses a different part of this module

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use booblik_protocol::AckPolicy;
use tokio::task::JoinHandle;

use crate::support::{RawConn, TestBroker, fetch_request, payloads, produce_request};

/// Panics seen on any thread of this test process since it started.
static PANICS: AtomicUsize = AtomicUsize::new(0);
static INSTALL_PANIC_HOOK: Once = Once::new();

/// Starts counting panics on every thread (idempotent). Call first in every test.
pub fn watch_panics() {
    INSTALL_PANIC_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            previous(info);
        }));
    });
}

/// Fails if any thread of this process panicked (the message is in the test's output).
pub fn assert_no_panics() {
    assert_eq!(
        PANICS.load(Ordering::SeqCst),
        0,
        "a thread panicked during the attack (its message is printed above)"
    );
}

/// A fresh connection can still produce a record and fetch it back unchanged.
pub async fn assert_serves(broker: &TestBroker) {
    assert_serves_at(broker.broker.local_addr()).await;
}

/// [`assert_serves`] for a broker at `addr`.
pub async fn assert_serves_at(addr: SocketAddr) {
    let mut conn = RawConn::connect(addr).await;
    let payload = b"still serving after the attack";
    let base = conn
        .call(&produce_request(
            1,
            "solo",
            0,
            AckPolicy::Written,
            &[payload],
        ))
        .await
        .produce()
        .base_offset;
    let fetched = conn
        .call(&fetch_request(2, "solo", 0, base, 4096, None))
        .await
        .fetch();
    assert_eq!(payloads(&fetched)[0], payload.to_vec());
    conn.metadata(&[]).await.expect_ok();
}

/// Pause between two round trips of a [`Bystander`].
const BYSTANDER_PAUSE_MS: u64 = 5;

/// A well-behaved client running alongside an attack: produce one record to `events`
/// partition 0, fetch it back, repeat.
#[derive(Debug)]
pub struct Bystander {
    stop: Arc<AtomicBool>,
    task: JoinHandle<BystanderReport>,
}

/// What a [`Bystander`] saw.
#[derive(Debug, Clone, Copy)]
pub struct BystanderReport {
    /// Completed produce-then-fetch round trips, every one correct.
    pub round_trips: u64,
    /// The slowest round trip.
    pub slowest: Duration,
}

impl Bystander {
    /// Connects and starts the loop. Every answer must be correct; a wrong or missing one
    /// panics the task, which [`Bystander::finish`] turns into a test failure.
    pub async fn start(addr: SocketAddr) -> Self {
        let mut conn = RawConn::connect(addr).await;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let task = tokio::spawn(async move {
            let mut report = BystanderReport {
                round_trips: 0,
                slowest: Duration::ZERO,
            };
            let mut id = 0i32;
            while !stopping.load(Ordering::SeqCst) {
                let started = Instant::now();
                let payload = format!("bystander {id}");
                id += 1;
                let base = conn
                    .call(&produce_request(
                        id,
                        "events",
                        0,
                        AckPolicy::Written,
                        &[payload.as_bytes()],
                    ))
                    .await
                    .produce()
                    .base_offset;
                id += 1;
                let fetched = conn
                    .call(&fetch_request(id, "events", 0, base, 4096, None))
                    .await
                    .fetch();
                assert_eq!(payloads(&fetched)[0], payload.as_bytes());
                report.round_trips += 1;
                report.slowest = report.slowest.max(started.elapsed());
                tokio::time::sleep(Duration::from_millis(BYSTANDER_PAUSE_MS)).await;
            }
            report
        });
        Self { stop, task }
    }

    /// Stops the loop and returns what it saw; fails the test if the bystander's task failed.
    pub async fn finish(self) -> BystanderReport {
        self.stop.store(true, Ordering::SeqCst);
        let report = self
            .task
            .await
            .expect("the bystander was served correctly throughout the attack");
        assert!(
            report.round_trips > 0,
            "the bystander completed no round trip during the attack"
        );
        report
    }
}

/// How a connection ended, seen from the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The broker closed it (EOF, or a reset because our unread bytes were discarded).
    Closed,
    /// It was still open when the wait ran out.
    StillOpen,
}

/// Reads everything the broker sends until it closes the connection or `wait` passes. Returns
/// the response frames received (each must be well formed, and no frame may be cut by the
/// close) and how the connection ended.
pub async fn drain_until_close(
    stream: &mut tokio::net::TcpStream,
    wait: Duration,
) -> (Vec<booblik_protocol::ResponseHeader>, Ending) {
    use tokio::io::AsyncReadExt;
    let deadline = tokio::time::Instant::now() + wait;
    let mut bytes = Vec::new();
    let ending = loop {
        match tokio::time::timeout_at(deadline, stream.read_buf(&mut bytes)).await {
            Err(_) => break Ending::StillOpen,
            Ok(Ok(0) | Err(_)) => break Ending::Closed,
            Ok(Ok(_)) => {}
        }
    };
    (response_headers(&bytes), ending)
}

/// Splits `bytes` into response frames, asserting each is well formed and none is cut short.
pub fn response_headers(mut bytes: &[u8]) -> Vec<booblik_protocol::ResponseHeader> {
    use booblik_protocol::{Decoded, decode_response_frame};
    let mut headers = Vec::new();
    while !bytes.is_empty() {
        match decode_response_frame(bytes).expect("the broker sends only well-formed frames") {
            Decoded::Complete { value, used } => {
                headers.push(value.header);
                bytes = &bytes[used..];
            }
            Decoded::Incomplete { .. } => panic!(
                "the broker closed the connection inside a response frame ({} bytes of it)",
                bytes.len()
            ),
        }
    }
    headers
}

/// Bytes handed to one `write` call by [`write_until_blocked`].
const FLOOD_CHUNK_BYTES: usize = 64 * 1024;

/// How a flood of pipelined requests written without reading ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloodEnd {
    /// A write made no progress for the stall time: the broker stopped reading.
    Blocked,
    /// `limit_bytes` were written without ever blocking.
    LimitReached,
    /// The connection failed before either.
    Failed,
}

/// Writes `request` over and over on `stream` without reading any answer, until a write makes
/// no progress for `stall`, `limit_bytes` have been written, or the connection fails. Returns
/// how it ended and the bytes written.
pub async fn write_until_blocked(
    stream: &mut tokio::net::TcpStream,
    request: &[u8],
    stall: Duration,
    limit_bytes: u64,
) -> (FloodEnd, u64) {
    use tokio::io::AsyncWriteExt;
    let chunk = request.repeat((FLOOD_CHUNK_BYTES / request.len()).max(1));
    let mut written_bytes = 0u64;
    let mut offset = 0;
    loop {
        if written_bytes >= limit_bytes {
            return (FloodEnd::LimitReached, written_bytes);
        }
        match tokio::time::timeout(stall, stream.write(&chunk[offset..])).await {
            Err(_) => return (FloodEnd::Blocked, written_bytes),
            Ok(Ok(n)) => {
                written_bytes += n as u64;
                offset = (offset + n) % chunk.len();
            }
            Ok(Err(_)) => return (FloodEnd::Failed, written_bytes),
        }
    }
}
