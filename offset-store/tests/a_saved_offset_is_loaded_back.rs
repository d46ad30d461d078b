//! Round trip: what a store saved is what it loads, for the file store also after reopening.

use std::sync::Arc;

use booblik_offset_store::{FileOffsetStore, InMemoryOffsetStore, OffsetStore};

/// Offsets at the edges of the range and in between.
const OFFSETS: [i64; 4] = [0, 1, 12, i64::MAX];

#[tokio::test]
async fn a_saved_offset_is_loaded_back_after_reopening_the_file_store() {
    let dir = tempfile::tempdir().unwrap();
    for (partition, offset) in (0..).zip(OFFSETS) {
        let store = FileOffsetStore::open(dir.path()).await.unwrap();
        store
            .save("billing", "events", partition, offset)
            .await
            .unwrap();
        assert_eq!(
            store.load("billing", "events", partition).await.unwrap(),
            Some(offset)
        );
    }
    let reopened = FileOffsetStore::open(dir.path()).await.unwrap();
    for (partition, offset) in (0..).zip(OFFSETS) {
        assert_eq!(
            reopened.load("billing", "events", partition).await.unwrap(),
            Some(offset),
            "partition {partition}"
        );
    }
}

#[tokio::test]
async fn a_later_save_replaces_the_earlier_one_even_when_it_goes_backwards() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileOffsetStore::open(dir.path()).await.unwrap();
    store.save("billing", "events", 0, 500).await.unwrap();
    store.save("billing", "events", 0, 7).await.unwrap(); // a consumer seeking back
    drop(store);
    let reopened = FileOffsetStore::open(dir.path()).await.unwrap();
    assert_eq!(
        reopened.load("billing", "events", 0).await.unwrap(),
        Some(7)
    );
}

#[tokio::test]
async fn the_in_memory_store_loads_what_it_saved() {
    let store = InMemoryOffsetStore::new();
    for (partition, offset) in (0..).zip(OFFSETS) {
        store
            .save("billing", "events", partition, offset)
            .await
            .unwrap();
    }
    for (partition, offset) in (0..).zip(OFFSETS) {
        assert_eq!(
            store.load("billing", "events", partition).await.unwrap(),
            Some(offset)
        );
    }
}

#[tokio::test]
async fn a_store_shared_as_arc_dyn_offset_store_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn OffsetStore> = Arc::new(FileOffsetStore::open(dir.path()).await.unwrap());
    let shared = Arc::clone(&store);
    shared.save("billing", "events", 3, 99).await.unwrap();
    assert_eq!(store.load("billing", "events", 3).await.unwrap(), Some(99));
}
