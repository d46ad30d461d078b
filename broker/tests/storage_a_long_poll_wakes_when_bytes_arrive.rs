//! `wait_for_bytes` (the FETCH v2 long poll) returns once enough bytes exist past the located
//! record, and at the deadline otherwise. (That the writer wakes it through a `watch` rather than
//! the waiter polling is the implementation's choice, which these tests do not tell apart.)

mod storage_support;

use std::sync::Arc;
use std::time::Duration;

use booblik_protocol::AckPolicy;
use storage_support::{config, open, partition, records};
use tokio::time::Instant;

/// Far beyond any wake-up delay; reaching it means the waiter was never woken.
const GENEROUS_WAIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_at_the_end_of_the_log_wakes_when_enough_bytes_are_appended() {
    let dir = tempfile::tempdir().unwrap();
    let storage = open(&config(
        dir.path(),
        booblik_broker::storage::WriteMode::Mapped,
        1 << 20,
    ))
    .unwrap();
    let partition = partition(&storage);
    partition
        .append(records(&[b"earlier"]), AckPolicy::Written)
        .await
        .unwrap();
    let deadline = Instant::now() + GENEROUS_WAIT;
    let waiter = {
        let partition = Arc::clone(&partition);
        tokio::spawn(async move {
            let at = partition.locate(1).unwrap();
            partition.wait_for_bytes(&at, 100, deadline).await;
        })
    };
    // 8 + 10 bytes: not enough for min_bytes = 100.
    partition
        .append(records(&[[7u8; 10]]), AckPolicy::Written)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!waiter.is_finished(), "woke before 100 bytes were there");
    // 18 + 8 + 90 = 116 bytes past offset 1.
    partition
        .append(records(&[[8u8; 90]]), AckPolicy::Written)
        .await
        .unwrap();
    tokio::time::timeout(GENEROUS_WAIT, waiter)
        .await
        .unwrap()
        .unwrap();
    assert!(
        Instant::now() < deadline,
        "returned at the deadline, not on the new bytes"
    );
    storage.close().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_behind_the_end_returns_at_once_when_enough_bytes_are_already_there() {
    let dir = tempfile::tempdir().unwrap();
    let storage = open(&config(
        dir.path(),
        booblik_broker::storage::WriteMode::File,
        1 << 20,
    ))
    .unwrap();
    let partition = partition(&storage);
    partition
        .append(records(&[[1u8; 50], [2u8; 50]]), AckPolicy::Written)
        .await
        .unwrap();
    let deadline = Instant::now() + GENEROUS_WAIT;
    let (first, second) = (partition.locate(0).unwrap(), partition.locate(1).unwrap());
    partition.wait_for_bytes(&first, 116, deadline).await;
    partition.wait_for_bytes(&second, 58, deadline).await;
    assert!(Instant::now() < deadline);
    storage.close().unwrap();
}

// tokio's paused clock needs the `test-util` feature, which the broker does not enable; the
// deadline here is short real time.
#[tokio::test]
async fn a_waiter_with_nothing_to_wait_for_returns_at_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let storage = open(&config(
        dir.path(),
        booblik_broker::storage::WriteMode::File,
        1 << 20,
    ))
    .unwrap();
    let partition = partition(&storage);
    let started = Instant::now();
    let deadline = started + Duration::from_millis(50);
    partition
        .wait_for_bytes(&partition.locate(0).unwrap(), 1, deadline)
        .await;
    assert!(Instant::now() >= deadline);
    storage.close().unwrap();
}

#[tokio::test]
async fn an_offset_outside_the_log_cannot_be_located_so_nothing_waits_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let storage = open(&config(
        dir.path(),
        booblik_broker::storage::WriteMode::File,
        1 << 20,
    ))
    .unwrap();
    let partition = partition(&storage);
    assert!(matches!(
        partition.locate(5),
        Err(booblik_broker::storage::StorageError::OffsetOutOfRange { .. })
    ));
    assert!(partition.read(5, 10).is_err());
    storage.close().unwrap();
}
