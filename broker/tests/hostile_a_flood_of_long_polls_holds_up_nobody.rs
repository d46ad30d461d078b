//! Many connections each parked in a FETCH long poll with the longest wait a client can ask
//! for (`i32::MAX` ms, clamped to 60 s) cost the broker a timer and a watch subscription each,
//! nothing more: other clients are served as usual meanwhile, one produce answers every waiter,
//! waiters with a short wait are answered at their deadline, and a shutdown answers all of them
//! at once instead of waiting out their 60 s.

mod support;

mod hostile_support;

use std::time::{Duration, Instant};

use booblik_protocol::LongPoll;
use hostile_support::{Bystander, assert_no_panics, assert_serves, watch_panics};
use support::{RawConn, TestBroker, fetch_request, payloads};

/// Connections parked in a long poll at once.
const LONG_POLLERS: usize = 200;
/// Time given to every poller's request to reach the broker and start waiting.
const SETTLE: Duration = Duration::from_millis(500);
/// Every answer these tests expect comes far sooner than the 60 s wait clamp.
const ANSWER_LIMIT: Duration = Duration::from_secs(15);

/// The longest wait a client can ask for.
const MAX_WAIT: LongPoll = LongPoll {
    max_wait_ms: i32::MAX,
    min_bytes: 1,
};

/// Opens `LONG_POLLERS` connections, each sending one long poll on `solo` at offset 0.
async fn park_pollers(broker: &TestBroker, poll: LongPoll) -> Vec<RawConn> {
    let mut pollers = Vec::with_capacity(LONG_POLLERS);
    for id in 0..LONG_POLLERS {
        let mut conn = broker.connect().await;
        conn.send(&fetch_request(id as i32, "solo", 0, 0, 4096, Some(poll)))
            .await;
        pollers.push(conn);
    }
    tokio::time::sleep(SETTLE).await;
    pollers
}

/// Waits for every poller's answer at once; returns each one's correlation id and records.
async fn answers(pollers: Vec<RawConn>) -> Vec<(i32, Vec<Vec<u8>>)> {
    let waits: Vec<_> = pollers
        .into_iter()
        .map(|mut conn| {
            tokio::spawn(async move {
                let response = tokio::time::timeout(ANSWER_LIMIT, conn.try_recv())
                    .await
                    .expect("a long poller was answered in time")
                    .expect("a long poller got an answer, not a closed connection");
                (response.header.correlation_id, payloads(&response.fetch()))
            })
        })
        .collect();
    let mut out = Vec::with_capacity(waits.len());
    for wait in waits {
        out.push(wait.await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_produce_answers_a_flood_of_maximal_long_polls_while_others_are_served() {
    watch_panics();
    let broker = TestBroker::start().await;
    let bystander = Bystander::start(broker.broker.local_addr()).await;
    let pollers = park_pollers(&broker, MAX_WAIT).await;
    // The bystander produces to `events`, which wakes none of them; let it run a while.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let report = bystander.finish().await;
    let started = Instant::now();
    broker.connect().await.produce("solo", 0, &[b"wake"]).await;
    let answered = answers(pollers).await;
    eprintln!(
        "{LONG_POLLERS} maximal long polls answered {:?} after one produce; bystander meanwhile: \
         {} round trips, slowest {:?}",
        started.elapsed(),
        report.round_trips,
        report.slowest
    );
    assert_eq!(answered.len(), LONG_POLLERS);
    for (id, records) in &answered {
        assert_eq!(records, &vec![b"wake".to_vec()], "poller {id}");
    }
    assert_serves(&broker).await;
    assert_no_panics();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_long_polls_is_answered_empty_at_the_deadline() {
    watch_panics();
    let broker = TestBroker::start().await;
    let wait_ms = 1_000;
    let started = Instant::now();
    let pollers = park_pollers(
        &broker,
        LongPoll {
            max_wait_ms: wait_ms,
            min_bytes: 1,
        },
    )
    .await;
    let answered = answers(pollers).await;
    let waited = started.elapsed();
    assert_eq!(answered.len(), LONG_POLLERS);
    assert!(answered.iter().all(|(_, records)| records.is_empty()));
    assert!(
        waited >= Duration::from_millis(wait_ms as u64),
        "answered after {waited:?}, before the deadline"
    );
    eprintln!("{LONG_POLLERS} long polls of {wait_ms} ms answered empty after {waited:?}");
    assert_serves(&broker).await;
    assert_no_panics();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_answers_a_flood_of_maximal_long_polls_at_once() {
    watch_panics();
    let broker = TestBroker::start().await;
    let pollers = park_pollers(&broker, MAX_WAIT).await;
    let waiting = tokio::spawn(answers(pollers));
    let started = Instant::now();
    tokio::time::timeout(ANSWER_LIMIT, broker.broker.shutdown())
        .await
        .expect("shutdown did not wait out the long polls")
        .unwrap();
    let answered = waiting.await.unwrap();
    eprintln!(
        "shutdown with {LONG_POLLERS} maximal long polls took {:?}",
        started.elapsed()
    );
    assert_eq!(answered.len(), LONG_POLLERS);
    assert!(answered.iter().all(|(_, records)| records.is_empty()));
    assert_no_panics();
}
