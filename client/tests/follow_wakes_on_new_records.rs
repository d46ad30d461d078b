//! `follow()` waits at the broker with FETCH v2 long polls and wakes when a record arrives; an
//! idle partition costs one request per wait, not a busy loop.

mod support;

use std::time::Duration;

use booblik_client::{Client, ConsumerConfig, StartPosition};
use booblik_protocol::ApiKey;
use support::{FakeBroker, test_config, within};

#[tokio::test]
async fn a_follower_at_the_end_wakes_when_a_record_is_appended() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    broker.append("t", 0, &[b"old"]);
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    // The longest wait the broker allows: only a new record can end this poll within the test.
    let config = ConsumerConfig {
        max_wait_ms: 60_000,
        ..ConsumerConfig::default()
    };
    let consumer = client
        .consumer("t", 0, StartPosition::Latest, config)
        .await
        .unwrap();
    let mut follow = consumer.follow();

    let mut next = Box::pin(follow.next_batch());
    // Still waiting before the append, with its one FETCH parked at the broker: a batch now
    // (the old record again) or a second FETCH would make the wake-up below prove nothing.
    let early = tokio::time::timeout(Duration::from_millis(200), next.as_mut()).await;
    assert!(early.is_err(), "answered before the append: {early:?}");
    assert_eq!(
        broker.seen_of(ApiKey::Fetch).len(),
        1,
        "the poll did not park"
    );
    broker.append("t", 0, &[b"new"]);
    let batch = within("a follow batch", next).await.unwrap();

    assert_eq!(batch.records.len(), 1);
    assert_eq!(batch.records[0].offset, 1);
    assert_eq!(&batch.records[0].payload[..], b"new");
    assert_eq!(follow.position(), 2);
    let fetches = broker.seen_of(ApiKey::Fetch);
    assert!(
        fetches.len() <= 2,
        "{} fetches for one record",
        fetches.len()
    );
    for fetch in fetches {
        let long_poll = fetch.long_poll.expect("follow must use FETCH v2");
        assert_eq!(long_poll.max_wait_ms, 60_000);
        assert_eq!(long_poll.min_bytes, 1);
    }
}

#[tokio::test]
async fn following_an_idle_partition_does_not_busy_poll() {
    const MAX_WAIT_MS: i32 = 200;
    const IDLE_MS: u64 = 1_000;

    let broker = FakeBroker::start(&[("t", 1)]).await;
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    let config = ConsumerConfig {
        max_wait_ms: MAX_WAIT_MS,
        ..ConsumerConfig::default()
    };
    let consumer = client
        .consumer("t", 0, StartPosition::Earliest, config)
        .await
        .unwrap();
    let mut follow = consumer.follow();

    let idle = tokio::time::timeout(Duration::from_millis(IDLE_MS), follow.next_batch()).await;
    assert!(
        idle.is_err(),
        "an empty partition produced a batch: {idle:?}"
    );
    // One fetch per wait (plus the one in flight); a busy poller makes hundreds.
    let fetches = broker.seen_of(ApiKey::Fetch).len();
    assert!(
        fetches <= (IDLE_MS / MAX_WAIT_MS as u64) as usize + 2,
        "{fetches} fetches in {IDLE_MS} ms with a {MAX_WAIT_MS} ms long poll"
    );
}
