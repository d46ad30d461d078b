//! "Nothing saved" is `None` (start from the configured start position), and only that: other
//! keys' files do not leak into it.

use booblik_offset_store::{FileOffsetStore, InMemoryOffsetStore, OffsetStore};

#[tokio::test]
async fn a_fresh_file_store_loads_none() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileOffsetStore::open(dir.path().join("not-yet-created"))
        .await
        .unwrap();
    assert_eq!(store.load("billing", "events", 0).await.unwrap(), None);
}

#[tokio::test]
async fn a_key_next_to_saved_ones_still_loads_none() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileOffsetStore::open(dir.path()).await.unwrap();
    store.save("billing", "events", 0, 12).await.unwrap();
    assert_eq!(
        store.load("billing", "events", 1).await.unwrap(),
        None,
        "another partition"
    );
    assert_eq!(
        store.load("billing", "orders", 0).await.unwrap(),
        None,
        "another topic"
    );
    assert_eq!(
        store.load("audit", "events", 0).await.unwrap(),
        None,
        "another consumer"
    );
}

#[tokio::test]
async fn a_fresh_in_memory_store_loads_none() {
    let store = InMemoryOffsetStore::new();
    store.save("billing", "events", 0, 12).await.unwrap();
    assert_eq!(store.load("billing", "events", 1).await.unwrap(), None);
}
