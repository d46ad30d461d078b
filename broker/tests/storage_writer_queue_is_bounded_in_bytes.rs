//! The writer queue is bounded in bytes as well as in batches: while the writer is held, appends
//! whose records would take the queue past `writer_queue_bytes` wait for room (backpressure),
//! even though the queue has places left, and a batch larger than the whole budget waits for an
//! empty queue and then goes alone instead of waiting forever.

mod storage_support;

use std::sync::Arc;
use std::time::Duration;

use booblik_broker::storage::WriteMode;
use booblik_broker::storage::config::MIN_WRITER_QUEUE_BYTES;
use booblik_protocol::{AckPolicy, RECORD_HEADER_BYTES};
use storage_support::{config_with_sim, open, partition, payload, read_all, records};

/// The queue's byte budget: 1 MiB, the smallest accepted.
const QUEUE_BYTES: u64 = MIN_WRITER_QUEUE_BYTES;
/// Each batch is one record taking a quarter of the budget in a segment, header included.
const RECORD_LOG_BYTES: usize = QUEUE_BYTES as usize / 4;
const PAYLOAD_BYTES: usize = RECORD_LOG_BYTES - RECORD_HEADER_BYTES;
/// Batches the budget holds at once.
const BATCHES_IN_BUDGET: usize = 4;
const APPENDS: u64 = 10;
/// How long an append must stay waiting to count as held back.
const HELD_MS: u64 = 200;
/// A batch that has not gone this long after the queue emptied never will.
const LIVENESS_S: u64 = 30;
/// Room for every record of the test in one segment, so reads see one plain log.
const SEGMENT_BYTES: u64 = 16 * 1024 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_beyond_the_byte_budget_wait_until_the_writer_makes_room() {
    let dir = tempfile::tempdir().unwrap();
    let (mut config, disk) = config_with_sim(dir.path(), WriteMode::File, SEGMENT_BYTES);
    config.writer_queue_bytes = QUEUE_BYTES;
    let storage = open(&config).unwrap();
    let partition = partition(&storage);
    assert!(
        config.writer_queue_depth > APPENDS as usize,
        "only the byte budget may hold the producer back"
    );

    // A stalled disk: the writer stops inside the first batch's write, still holding its room.
    let gate = disk.stall();
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
    let producer = {
        let partition = Arc::clone(&partition);
        // One producer issuing ack-NONE appends one after another: each returns once queued.
        tokio::spawn(async move {
            for n in 0..APPENDS {
                partition
                    .append(records(&[payload(n, PAYLOAD_BYTES)]), AckPolicy::None)
                    .await
                    .unwrap();
                done_tx.send(n).unwrap();
            }
        })
    };
    // Exactly the batches that fit the budget get in; the next one waits for room.
    for expected in 0..BATCHES_IN_BUDGET as u64 {
        assert_eq!(done_rx.recv().await, Some(expected));
    }
    let blocked = tokio::time::timeout(Duration::from_millis(HELD_MS), done_rx.recv()).await;
    assert!(
        blocked.is_err(),
        "an append got past a full byte budget: {blocked:?}"
    );
    let stats = partition.stats();
    assert_eq!(stats.queued_appends, BATCHES_IN_BUDGET);
    assert_eq!(stats.queued_bytes, QUEUE_BYTES);
    assert!(!producer.is_finished());

    drop(gate);
    producer.await.unwrap();
    // Queued behind every NONE batch, so answered once they are all written.
    let last = partition
        .append(records(&[payload(APPENDS, 16)]), AckPolicy::Written)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(last.base_offset, APPENDS as i64);
    let mut expected: Vec<(i64, Vec<u8>)> = (0..APPENDS)
        .map(|n| (n as i64, payload(n, PAYLOAD_BYTES)))
        .collect();
    expected.push((APPENDS as i64, payload(APPENDS, 16)));
    assert_eq!(
        read_all(&partition),
        expected,
        "appends land in arrival order"
    );
    assert_eq!(partition.stats().queued_bytes, 0);
    storage.close().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_larger_than_the_whole_budget_waits_for_an_empty_queue_then_goes_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (mut config, disk) = config_with_sim(dir.path(), WriteMode::File, SEGMENT_BYTES);
    config.writer_queue_bytes = QUEUE_BYTES;
    let storage = open(&config).unwrap();
    let partition = partition(&storage);
    // Twice the budget in one batch.
    let large: Vec<Vec<u8>> = (1..=2 * BATCHES_IN_BUDGET as u64)
        .map(|n| payload(n, PAYLOAD_BYTES))
        .collect();

    // A stalled disk: the writer stops inside the first batch's write, still holding its room.
    let gate = disk.stall();
    partition
        .append(records(&[payload(0, 16)]), AckPolicy::None)
        .await
        .unwrap();
    let large_append = {
        let partition = Arc::clone(&partition);
        let large = large.clone();
        tokio::spawn(async move { partition.append(records(&large), AckPolicy::Written).await })
    };
    let small_bytes = (16 + RECORD_HEADER_BYTES) as u64;
    tokio::time::sleep(Duration::from_millis(HELD_MS)).await;
    assert!(!large_append.is_finished());
    assert_eq!(
        partition.stats().queued_bytes,
        small_bytes,
        "the large batch reserved bytes beside another batch"
    );

    drop(gate);
    let appended = tokio::time::timeout(Duration::from_secs(LIVENESS_S), large_append)
        .await
        .expect("the large batch never got into the emptied queue")
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(appended.base_offset, 1);
    assert_eq!(appended.log_end_offset, 1 + large.len() as i64);
    let mut expected = vec![(0, payload(0, 16))];
    expected.extend((1..).zip(large));
    assert_eq!(read_all(&partition), expected);
    storage.close().unwrap();
}
