//! `max_connections` bounds the sessions (and so the memory) a broker holds. At the limit the
//! broker closes its longest-idle connection to admit a new one
//! (`hostile_idle_sockets_give_way_to_new_clients_at_the_connection_limit`); when every open
//! connection has a request in flight — here, each a parked long poll — there is none to close,
//! and a connection beyond the limit is accepted and closed at once, unanswered, while the open
//! ones keep working.

mod support;

mod hostile_support;

use std::time::{Duration, Instant};

use booblik_protocol::{LongPoll, MetadataRequest, Request, RequestBody};
use hostile_support::{Ending, assert_no_panics, assert_serves, drain_until_close, watch_panics};
use support::{RawConn, TestBroker, fetch_request, payloads};
use tokio::io::AsyncWriteExt;

/// The limit in this test.
const MAX_CONNECTIONS: usize = 4;
/// Connections that try to get in while the limit is reached.
const REJECTED_ATTEMPTS: usize = 20;
/// The broker's idle timeout: long, so a prompt close is the limit's doing.
const IDLE_TIMEOUT_MS: u64 = 120_000;
/// A rejected connection must be closed well before any broker timer could close it.
const PROMPT_CLOSE: Duration = Duration::from_secs(10);
/// Time for the broker to read a long poll just sent (loopback: well under a millisecond).
const SETTLE: Duration = Duration::from_millis(500);

fn metadata_frame(correlation_id: i32) -> Vec<u8> {
    let mut out = Vec::new();
    Request {
        correlation_id,
        body: RequestBody::Metadata(MetadataRequest::default()),
    }
    .encode(&mut out);
    out
}

/// A connection that gets an answer to METADATA, or `None` if the broker closes it.
async fn try_admitted(addr: std::net::SocketAddr) -> Option<RawConn> {
    let mut conn = RawConn::connect(addr).await;
    // A turned-away connection may already be closed: a failed write means the same as no
    // answer.
    conn.stream.write_all(&metadata_frame(1)).await.ok()?;
    tokio::time::timeout(PROMPT_CLOSE, conn.try_recv())
        .await
        .expect("an answer or a close, promptly")?;
    Some(conn)
}

/// An admitted connection that then parks a long poll on `solo` at `offset`: busy from then on.
async fn parked_long_poll(addr: std::net::SocketAddr, offset: i64) -> RawConn {
    let mut conn = try_admitted(addr)
        .await
        .expect("connections up to the limit are served");
    let long_poll = LongPoll {
        max_wait_ms: 60_000,
        min_bytes: 1,
    };
    conn.send(&fetch_request(5, "solo", 0, offset, 4096, Some(long_poll)))
        .await;
    conn
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_beyond_the_limit_is_closed_at_once_when_none_is_idle() {
    watch_panics();
    let broker = TestBroker::start_with(|config| {
        config.max_connections = MAX_CONNECTIONS;
        config.idle_timeout_ms = IDLE_TIMEOUT_MS;
        config.frame_read_timeout_ms = IDLE_TIMEOUT_MS;
    })
    .await;
    let addr = broker.broker.local_addr();

    let mut busy = Vec::new();
    for _ in 0..MAX_CONNECTIONS {
        busy.push(parked_long_poll(addr, 0).await);
    }
    tokio::time::sleep(SETTLE).await;

    for attempt in 0..REJECTED_ATTEMPTS {
        let mut extra = RawConn::connect(addr).await;
        // The request may or may not reach the broker before the close; either way it is
        // never answered.
        let _ = extra.stream.write_all(&metadata_frame(2)).await;
        let started = Instant::now();
        let (answers, ending) = drain_until_close(&mut extra.stream, PROMPT_CLOSE).await;
        assert_eq!(
            ending,
            Ending::Closed,
            "extra connection {attempt} stayed open"
        );
        assert!(
            answers.is_empty(),
            "extra connection {attempt} was answered"
        );
        assert!(started.elapsed() < PROMPT_CLOSE);
    }

    // The parked long polls were not disturbed: a record (appended past the full listener)
    // wakes each of them.
    broker
        .broker
        .storage()
        .partition("solo", 0)
        .unwrap()
        .append(
            booblik_protocol::RecordSet::from_payloads([b"wake up"]).unwrap(),
            booblik_protocol::AckPolicy::Written,
        )
        .await
        .unwrap();
    for conn in &mut busy {
        let answer = conn.recv().await;
        assert_eq!(payloads(&answer.fetch()), vec![b"wake up".to_vec()]);
    }
    // Answered, they are idle: now a new client is admitted (one of them gives way).
    assert_serves(&broker).await;
    assert_no_panics();
}
