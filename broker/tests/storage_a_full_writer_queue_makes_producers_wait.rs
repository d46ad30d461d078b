//! The writer queue is bounded: when it is full, `append` waits for room (backpressure) instead
//! of buffering without limit, and appends still land in arrival order.

mod storage_support;

use std::sync::Arc;
use std::time::Duration;

use booblik_protocol::AckPolicy;
use storage_support::{config_with_sim, open, partition, payload, read_all, records};

const QUEUE_DEPTH: usize = 4;
const APPENDS: u64 = 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_beyond_the_queue_depth_wait_until_the_writer_makes_room() {
    let dir = tempfile::tempdir().unwrap();
    let (mut config, disk) = config_with_sim(
        dir.path(),
        booblik_broker::storage::WriteMode::File,
        1 << 20,
    );
    config.writer_queue_depth = QUEUE_DEPTH;
    let storage = open(&config).unwrap();
    let partition = partition(&storage);

    // A stalled disk: the writer stops inside the first batch's write, still holding its room.
    let gate = disk.stall();
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
    let producer = {
        let partition = Arc::clone(&partition);
        // One producer issuing ack-NONE appends one after another: each returns once queued.
        tokio::spawn(async move {
            for n in 0..APPENDS {
                partition
                    .append(records(&[payload(n, 16)]), AckPolicy::None)
                    .await
                    .unwrap();
                done_tx.send(n).unwrap();
            }
        })
    };
    // Exactly QUEUE_DEPTH appends get in; the next one waits for room.
    for expected in 0..QUEUE_DEPTH as u64 {
        assert_eq!(done_rx.recv().await, Some(expected));
    }
    let blocked = tokio::time::timeout(Duration::from_millis(200), done_rx.recv()).await;
    assert!(
        blocked.is_err(),
        "an append got past a full queue: {blocked:?}"
    );
    assert_eq!(partition.stats().queued_appends, QUEUE_DEPTH);
    assert!(!producer.is_finished());

    drop(gate);
    producer.await.unwrap();
    // Ack NONE gives no answer: wait for the writer through the high watermark.
    for _ in 0..10_000 {
        if partition.high_watermark() == APPENDS as i64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let log = read_all(&partition);
    let expected: Vec<(i64, Vec<u8>)> = (0..APPENDS).map(|n| (n as i64, payload(n, 16))).collect();
    assert_eq!(log, expected, "appends land in arrival order");
    storage.close().unwrap();
}
