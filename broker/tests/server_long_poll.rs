//! FETCH v2 long poll: woken by a produce, not by a timer; empty at its deadline.

mod support;

use std::time::{Duration, Instant};

use booblik_protocol::LongPoll;
use support::{TestBroker, fetch_request, payloads};

#[tokio::test]
async fn a_long_poll_is_woken_by_a_produce_well_before_its_deadline() {
    let broker = TestBroker::start().await;
    let mut waiter = broker.connect().await;
    let mut producer = broker.connect().await;
    let started = Instant::now();
    let poll = LongPoll {
        max_wait_ms: 30_000,
        min_bytes: 1,
    };
    waiter
        .send(&fetch_request(1, "solo", 0, 0, 4096, Some(poll)))
        .await;
    // The poll must be parked before the produce: an answer now (empty, or with records that
    // were already there) would make the wake-up below prove nothing.
    let early = tokio::time::timeout(Duration::from_millis(200), waiter.try_recv()).await;
    assert!(early.is_err(), "answered before the produce: {early:?}");
    producer.produce("solo", 0, &[b"wake up"]).await;
    let fetched = waiter.recv().await.fetch();
    assert_eq!(payloads(&fetched), vec![b"wake up".to_vec()]);
    // Woken by the produce, far from the 30 s deadline.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_long_poll_returns_empty_at_its_deadline() {
    let broker = TestBroker::start().await;
    let mut waiter = broker.connect().await;
    let started = Instant::now();
    let poll = LongPoll {
        max_wait_ms: 300,
        min_bytes: 1,
    };
    let response = waiter
        .call(&fetch_request(2, "solo", 0, 0, 4096, Some(poll)))
        .await
        .fetch();
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "returned after {:?}",
        started.elapsed()
    );
    assert_eq!((response.high_watermark, response.payload.len()), (0, 0));
}

#[tokio::test]
async fn a_long_poll_waits_for_min_bytes() {
    let broker = TestBroker::start().await;
    let mut waiter = broker.connect().await;
    let mut producer = broker.connect().await;
    // 3 records of 8 + 10 bytes are needed for 50 bytes.
    let poll = LongPoll {
        max_wait_ms: 30_000,
        min_bytes: 50,
    };
    waiter
        .send(&fetch_request(3, "solo", 0, 0, 4096, Some(poll)))
        .await;
    producer.produce("solo", 0, &[&[1u8; 10]]).await;
    producer.produce("solo", 0, &[&[2u8; 10]]).await;
    // Not answered yet: 36 bytes < 50.
    let early = tokio::time::timeout(Duration::from_millis(300), waiter.try_recv()).await;
    assert!(early.is_err(), "answered before min_bytes were available");
    producer.produce("solo", 0, &[&[3u8; 10]]).await;
    let fetched = waiter.recv().await.fetch();
    assert_eq!(payloads(&fetched).len(), 3);
}

#[tokio::test]
async fn responses_before_a_long_poll_are_not_held_behind_it() {
    let broker = TestBroker::start().await;
    let mut conn = broker.connect().await;
    let mut bytes = Vec::new();
    support::produce_request(1, "solo", 0, booblik_protocol::AckPolicy::Written, &[b"x"])
        .encode(&mut bytes);
    fetch_request(
        2,
        "solo",
        0,
        1,
        4096,
        Some(LongPoll {
            max_wait_ms: 5_000,
            min_bytes: 1,
        }),
    )
    .encode(&mut bytes);
    conn.send_raw(&bytes).await;
    let first = tokio::time::timeout(Duration::from_secs(2), conn.recv()).await;
    assert_eq!(
        first
            .expect("produce answered while the fetch waits")
            .header
            .correlation_id,
        1
    );
}
