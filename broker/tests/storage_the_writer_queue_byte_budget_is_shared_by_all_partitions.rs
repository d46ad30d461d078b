//! The writer queues' byte budget (`writer_queue_bytes`) is one budget for the whole broker, not
//! one per partition: while the disk stalls, batches queued on one partition make appends to
//! another wait — except that a partition with nothing queued may always admit one batch, so a
//! busy partition can never starve the others.

mod storage_support;

use std::sync::Arc;
use std::time::Duration;

use booblik_broker::storage::config::MIN_WRITER_QUEUE_BYTES;
use booblik_broker::storage::{Storage, WriteMode};
use booblik_protocol::{AckPolicy, RECORD_HEADER_BYTES};
use storage_support::{TOPIC, config_with_sim, payload, records, topic};

/// The budget: 1 MiB, the smallest accepted.
const QUEUE_BYTES: u64 = MIN_WRITER_QUEUE_BYTES;
/// Each batch is one record taking a quarter of the budget, header included.
const PAYLOAD_BYTES: usize = QUEUE_BYTES as usize / 4 - RECORD_HEADER_BYTES;
/// How long an append must stay waiting to count as held back.
const HELD_MS: u64 = 200;
/// Room for every record of the test in one segment.
const SEGMENT_BYTES: u64 = 16 * 1024 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_budget_holds_back_a_second_partition_after_its_one_free_batch() {
    let dir = tempfile::tempdir().unwrap();
    let (mut config, disk) = config_with_sim(dir.path(), WriteMode::File, SEGMENT_BYTES);
    config.writer_queue_bytes = QUEUE_BYTES;
    let storage = Storage::open(config, &[(topic(), 2)]).unwrap();
    let busy = Arc::clone(storage.partition(TOPIC, 0).unwrap());
    let quiet = Arc::clone(storage.partition(TOPIC, 1).unwrap());

    let stall = disk.stall();
    // The busy partition fills the whole budget (its writer stalls inside the first batch).
    for n in 0..4 {
        busy.append(records(&[payload(n, PAYLOAD_BYTES)]), AckPolicy::None)
            .await
            .unwrap();
    }
    assert_eq!(busy.stats().queued_bytes, QUEUE_BYTES);
    // A fifth batch on the busy partition waits for the budget.
    let busy_more = {
        let busy = Arc::clone(&busy);
        tokio::spawn(async move {
            busy.append(records(&[payload(4, PAYLOAD_BYTES)]), AckPolicy::None)
                .await
        })
    };
    // The quiet partition has nothing queued: its first batch is admitted at once.
    tokio::time::timeout(
        Duration::from_secs(5),
        quiet.append(records(&[payload(10, PAYLOAD_BYTES)]), AckPolicy::None),
    )
    .await
    .expect("a partition with nothing queued was starved by another partition")
    .unwrap();
    // Its second batch must wait: the budget is the broker's, and it is spent.
    let quiet_more = {
        let quiet = Arc::clone(&quiet);
        tokio::spawn(async move {
            quiet
                .append(records(&[payload(11, PAYLOAD_BYTES)]), AckPolicy::None)
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(HELD_MS)).await;
    assert!(
        !quiet_more.is_finished(),
        "a second partition queued past the spent broker-wide budget"
    );
    assert!(!busy_more.is_finished());

    drop(stall);
    busy_more.await.unwrap().unwrap();
    quiet_more.await.unwrap().unwrap();
    // Everything lands, in order, on each partition.
    let last_busy = busy
        .append(records(&[b"end"]), AckPolicy::Written)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(last_busy.base_offset, 5);
    let last_quiet = quiet
        .append(records(&[b"end"]), AckPolicy::Written)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(last_quiet.base_offset, 2);
    // The writer answers before it returns a batch's room: wait (bounded) for the budget to
    // come back whole, passes included.
    for _ in 0..10_000 {
        if busy.stats().queued_bytes + quiet.stats().queued_bytes == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(busy.stats().queued_bytes + quiet.stats().queued_bytes, 0);
    storage.close().unwrap();
}
