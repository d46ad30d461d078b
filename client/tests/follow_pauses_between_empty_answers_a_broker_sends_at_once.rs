//! A broker that answers a long poll at once (ignoring `maxWaitMillis`) must not turn
//! `follow()` into a hot loop: after an early empty answer the follower pauses, so empty polls
//! start at least `MIN_EMPTY_POLL_INTERVAL_MS` apart.

mod support;

use std::time::Duration;

use booblik_client::consumer::config::MIN_EMPTY_POLL_INTERVAL_MS;
use booblik_client::{Client, ConsumerConfig, StartPosition};
use booblik_protocol::ApiKey;
use support::{FakeBroker, test_config};

#[tokio::test]
async fn a_follower_polls_a_broker_that_ignores_the_wait_at_most_once_per_interval() {
    // Real time: under paused time a hot loop and a pausing follower could not be told apart
    // (the clock would only move while the runtime is idle).
    const IDLE_MS: u64 = 1_000;

    let broker = FakeBroker::start(&[("t", 1)]).await;
    broker.ignore_max_wait();
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    let config = ConsumerConfig {
        max_wait_ms: 60_000,
        ..ConsumerConfig::default()
    };
    let mut follow = client
        .consumer("t", 0, StartPosition::Earliest, config)
        .await
        .unwrap()
        .follow();

    let idle = tokio::time::timeout(Duration::from_millis(IDLE_MS), follow.next_batch()).await;
    assert!(
        idle.is_err(),
        "an empty partition produced a batch: {idle:?}"
    );

    let fetches = broker.seen_of(ApiKey::Fetch);
    assert!(fetches.len() >= 2, "the follower stopped polling");
    // One per interval (plus the one in flight); a hot loop makes thousands.
    assert!(
        fetches.len() as u64 <= IDLE_MS / MIN_EMPTY_POLL_INTERVAL_MS + 2,
        "{} fetches in {IDLE_MS} ms against a broker answering at once",
        fetches.len()
    );
}
