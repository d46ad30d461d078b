//! Different keys neither share a value nor wait for each other.

use std::time::Duration;

use booblik_offset_store::{FileOffsetStore, OffsetStore};

/// Far longer than any save; only turns a deadlock into a failure, measures nothing.
const DEADLOCK_LIMIT: Duration = Duration::from_secs(20);

/// Head start for the stalled save to reach its blocking `open` before the other key saves.
const STALL_HEAD_START: Duration = Duration::from_millis(200);

#[tokio::test]
async fn each_key_keeps_its_own_value() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileOffsetStore::open(dir.path()).await.unwrap();
    // Keys that differ in one part only, including names whose escaped forms look alike.
    let keys = [
        ("billing", "events", 0),
        ("billing", "events", 1),
        ("billing", "orders", 0),
        ("audit", "events", 0),
        ("a/b", "events", 0),
        ("a%2Fb", "events", 0),
        ("a.b", "events", 0),
        ("a_b", "events", 0),
    ];
    for (offset, (consumer, topic, partition)) in (100..).zip(keys) {
        store
            .save(consumer, topic, partition, offset)
            .await
            .unwrap();
    }
    let reopened = FileOffsetStore::open(dir.path()).await.unwrap();
    for (offset, (consumer, topic, partition)) in (100..).zip(keys) {
        assert_eq!(
            reopened.load(consumer, topic, partition).await.unwrap(),
            Some(offset),
            "{consumer:?} {topic:?} {partition}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_save_does_not_hold_up_another_key() {
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(FileOffsetStore::open(dir.path()).await.unwrap());
    store.save("billing", "events", 0, 1).await.unwrap();

    // Stall key A's next save: its temp file becomes a FIFO, whose open for writing blocks
    // until someone opens it for reading.
    let stalled_temp = store
        .file_path("billing", "events", 0)
        .unwrap()
        .with_extension("offset.tmp");
    let status = std::process::Command::new("mkfifo")
        .arg(&stalled_temp)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo failed");
    let stalled = tokio::spawn({
        let store = std::sync::Arc::clone(&store);
        async move { store.save("billing", "events", 0, 2).await }
    });
    tokio::time::sleep(STALL_HEAD_START).await;
    assert!(
        !stalled.is_finished(),
        "key A's save must be stalled on the FIFO"
    );

    tokio::time::timeout(DEADLOCK_LIMIT, store.save("billing", "events", 1, 7))
        .await
        .expect("another partition's save must not wait for the stalled one")
        .unwrap();
    tokio::time::timeout(DEADLOCK_LIMIT, store.save("audit", "events", 0, 8))
        .await
        .expect("another consumer's save must not wait for the stalled one")
        .unwrap();
    assert!(!stalled.is_finished(), "key A's save is still stalled");

    // Release A: read the FIFO. fsync of a FIFO fails, so A's save reports an error and its
    // saved position stays the previous one.
    let reader = tokio::task::spawn_blocking(move || std::fs::read(&stalled_temp));
    let stalled_result = tokio::time::timeout(DEADLOCK_LIMIT, stalled)
        .await
        .expect("the released save finishes")
        .unwrap();
    assert!(stalled_result.is_err(), "an fsync of a FIFO cannot succeed");
    reader.await.unwrap().unwrap();
    assert_eq!(store.load("billing", "events", 0).await.unwrap(), Some(1));
    assert_eq!(store.load("billing", "events", 1).await.unwrap(), Some(7));
    assert_eq!(store.load("audit", "events", 0).await.unwrap(), Some(8));
}
