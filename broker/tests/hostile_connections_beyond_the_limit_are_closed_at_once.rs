//! `max_connections` bounds the sessions (and so the memory) a broker holds: a connection
//! beyond the limit is accepted and closed at once, unanswered, while the connections already
//! open keep working; when one of them closes, its slot is free for the next client.

mod support;

mod hostile_support;

use std::time::{Duration, Instant};

use booblik_protocol::{MetadataRequest, Request, RequestBody};
use hostile_support::{Ending, assert_no_panics, assert_serves, drain_until_close, watch_panics};
use support::{RawConn, TestBroker};
use tokio::io::AsyncWriteExt;

/// The limit in this test.
const MAX_CONNECTIONS: usize = 4;
/// Connections that try to get in while the limit is reached.
const REJECTED_ATTEMPTS: usize = 20;
/// The broker's idle timeout: long, so a prompt close is the limit's doing.
const IDLE_TIMEOUT_MS: u64 = 120_000;
/// A rejected connection must be closed well before any broker timer could close it.
const PROMPT_CLOSE: Duration = Duration::from_secs(10);

fn metadata(correlation_id: i32) -> Request {
    Request {
        correlation_id,
        body: RequestBody::Metadata(MetadataRequest::default()),
    }
}

fn metadata_frame(correlation_id: i32) -> Vec<u8> {
    let mut out = Vec::new();
    metadata(correlation_id).encode(&mut out);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_limit_are_closed_at_once_and_a_freed_slot_is_reused() {
    watch_panics();
    let broker = TestBroker::start_with(|config| {
        config.max_connections = MAX_CONNECTIONS;
        config.idle_timeout_ms = IDLE_TIMEOUT_MS;
        config.frame_read_timeout_ms = IDLE_TIMEOUT_MS;
    })
    .await;
    let addr = broker.broker.local_addr();

    let mut admitted = Vec::new();
    for _ in 0..MAX_CONNECTIONS {
        admitted.push(
            try_admitted(addr)
                .await
                .expect("connections up to the limit are served"),
        );
    }

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

    // The admitted connections were not disturbed.
    for (n, conn) in admitted.iter_mut().enumerate() {
        let answer = conn.call(&metadata(10 + n as i32)).await;
        answer.expect_ok();
    }

    // Closing one frees its slot — once its session has seen the close.
    drop(admitted.pop());
    let deadline = Instant::now() + PROMPT_CLOSE;
    let replacement = loop {
        if let Some(conn) = try_admitted(addr).await {
            break conn;
        }
        assert!(Instant::now() < deadline, "the freed slot was never reused");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    admitted.push(replacement);
    // Full again: the next one is turned away.
    assert!(
        try_admitted(addr).await.is_none(),
        "a connection beyond the limit was served"
    );
    for conn in &mut admitted {
        conn.metadata(&[]).await.expect_ok();
    }
    drop(admitted);
    // Slots come back as the sessions end; then the broker serves a new client normally.
    let deadline = Instant::now() + PROMPT_CLOSE;
    while try_admitted(addr).await.is_none() {
        assert!(Instant::now() < deadline, "slots were never freed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_serves(&broker).await;
    assert_no_panics();
}
