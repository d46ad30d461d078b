//! Saves for one key take effect in call order: when many are in flight at once, the last one
//! called is the one on disk, and a cancelled save can never land after a later one.

use booblik_offset_store::{FileOffsetStore, OffsetStore};
use futures::FutureExt;

/// Saves started together. `join_all` polls up to 30 futures in order on its first poll, so
/// their call order is their index order.
const CONCURRENT_SAVES: i64 = 24;

/// Rounds of "start a save, cancel it mid-flight, save a later value".
const CANCEL_ROUNDS: i64 = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_of_many_concurrent_saves_wins() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileOffsetStore::open(dir.path()).await.unwrap();
    let saves = (1..=CONCURRENT_SAVES).map(|offset| store.save("billing", "events", 0, offset));
    for result in futures::future::join_all(saves).await {
        result.unwrap();
    }
    assert_eq!(
        store.load("billing", "events", 0).await.unwrap(),
        Some(CONCURRENT_SAVES)
    );

    let reopened = FileOffsetStore::open(dir.path()).await.unwrap();
    assert_eq!(
        reopened.load("billing", "events", 0).await.unwrap(),
        Some(CONCURRENT_SAVES)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_save_never_overwrites_a_later_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileOffsetStore::open(dir.path()).await.unwrap();
    for round in 0..CANCEL_ROUNDS {
        let cancelled_offset = 2 * round + 1;
        let later_offset = 2 * round + 2;
        let mut cancelled = store.save("billing", "events", 0, cancelled_offset);
        assert!(
            (&mut cancelled).now_or_never().is_none(),
            "the save must still be in flight (its fsync is running) when cancelled"
        );
        drop(cancelled);
        store
            .save("billing", "events", 0, later_offset)
            .await
            .unwrap();
        assert_eq!(
            store.load("billing", "events", 0).await.unwrap(),
            Some(later_offset),
            "round {round}"
        );
    }
}
