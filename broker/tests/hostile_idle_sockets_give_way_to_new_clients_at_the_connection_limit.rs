//! Idle sockets cannot lock new clients out. With the connection limit filled by sockets that
//! connected and sent nothing plus parked long polls, each new client is admitted by closing the
//! longest-idle connection — oldest first — and its METADATA is answered; the parked long polls
//! (requests in flight, so never idle) stay open and are answered when a record arrives.
//!
//! Each eviction is counted (`booblik_connections_evicted_total`, read from a Prometheus recorder
//! installed in this test's process).
//!
//! Before eviction existed, a new client at the limit was closed at once until the idle
//! sockets' own timeout (ten minutes by default) closed them.

mod support;

mod hostile_support;

use std::time::Duration;

use booblik_protocol::LongPoll;
use hostile_support::{Ending, assert_no_panics, drain_until_close, watch_panics};
use support::{RawConn, TestBroker, fetch_request, payloads};

/// The limit in this test.
const MAX_CONNECTIONS: usize = 12;
/// Connections that connect and never send anything.
const IDLE_SOCKETS: usize = 8;
/// Parked long polls filling the rest of the limit.
const PARKED_POLLS: usize = MAX_CONNECTIONS - IDLE_SOCKETS;
/// New clients arriving at the full broker (each evicts one idle socket).
const NEW_CLIENTS: usize = 6;
/// Broker timers far beyond the test: only eviction can close the idle sockets in time.
const TIMEOUT_MS: u64 = 120_000;
/// An evicted socket must be closed well before any broker timer could close it.
const PROMPT_CLOSE: Duration = Duration::from_secs(10);
/// How long a connection that must stay open is watched.
const STAYS_OPEN: Duration = Duration::from_millis(200);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sockets_give_way_to_new_clients_and_parked_long_polls_are_still_answered() {
    watch_panics();
    // This test binary is a process of its own: the global recorder sees only this broker.
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .expect("the only recorder of this test process");
    let broker = TestBroker::start_with(|config| {
        config.max_connections = MAX_CONNECTIONS;
        config.idle_timeout_ms = TIMEOUT_MS;
        config.frame_read_timeout_ms = TIMEOUT_MS;
    })
    .await;
    let addr = broker.broker.local_addr();

    // Idle sockets first, a few milliseconds apart, so their order of idleness is known.
    let mut idle = Vec::new();
    for _ in 0..IDLE_SOCKETS {
        idle.push(RawConn::connect(addr).await);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut polls = Vec::new();
    for n in 0..PARKED_POLLS {
        let mut conn = RawConn::connect(addr).await;
        let long_poll = LongPoll {
            max_wait_ms: 60_000,
            min_bytes: 1,
        };
        conn.send(&fetch_request(
            n as i32,
            "solo",
            0,
            0,
            4096,
            Some(long_poll),
        ))
        .await;
        polls.push(conn);
    }

    let mut clients = Vec::new();
    for n in 0..NEW_CLIENTS {
        let mut client = RawConn::connect(addr).await;
        client.metadata(&["solo"]).await.expect_ok();
        // The longest-idle socket gave way; the next one is still open.
        let (answers, ending) = drain_until_close(&mut idle[n].stream, PROMPT_CLOSE).await;
        assert_eq!(ending, Ending::Closed, "idle socket {n} was not evicted");
        assert!(answers.is_empty());
        let (_, next) = drain_until_close(&mut idle[n + 1].stream, STAYS_OPEN).await;
        assert_eq!(
            next,
            Ending::StillOpen,
            "idle socket {} was evicted before the longer-idle {n}",
            n + 1
        );
        clients.push(client);
    }

    // The parked polls were never evicted: a record wakes each of them.
    clients[0]
        .produce("solo", 0, &[b"for the parked polls"])
        .await;
    for (n, poll) in polls.iter_mut().enumerate() {
        let answer = poll.recv().await;
        assert_eq!(answer.header.correlation_id, n as i32);
        assert_eq!(
            payloads(&answer.fetch()),
            vec![b"for the parked polls".to_vec()]
        );
    }
    for client in &mut clients {
        client.metadata(&[]).await.expect_ok();
    }
    let evicted = recorder
        .render()
        .lines()
        .find_map(|line| line.strip_prefix("booblik_connections_evicted_total "))
        .map(|count| count.trim().to_owned());
    assert_eq!(
        evicted.as_deref(),
        Some(NEW_CLIENTS.to_string().as_str()),
        "one eviction counted per new client"
    );
    assert_no_panics();
}
