//! The layout is reversible: the keys a store holds can be read back from the file names,
//! whatever characters the names contain, and foreign entries are skipped.

use booblik_offset_store::{FileOffsetStore, OffsetKey, OffsetStore};

#[tokio::test]
async fn every_saved_key_is_listed_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileOffsetStore::open(dir.path()).await.unwrap();
    let mut keys = vec![
        OffsetKey::new("billing", "events", 0).unwrap(),
        OffsetKey::new("billing", "events", 10).unwrap(),
        OffsetKey::new("billing", ".events", 2).unwrap(),
        OffsetKey::new("../x y/%", "events", 1).unwrap(),
        OffsetKey::new("🦀", "a.b", 7).unwrap(),
    ];
    for key in &keys {
        store
            .save(key.consumer(), key.topic(), key.partition(), 1)
            .await
            .unwrap();
    }
    // Entries that are not ours: a volume's lost+found, notes, a non-canonical escape.
    std::fs::create_dir(dir.path().join("lost+found")).unwrap();
    std::fs::write(dir.path().join("README"), b"notes").unwrap();
    std::fs::create_dir_all(dir.path().join("%2e%2e").join("events")).unwrap();
    std::fs::write(
        dir.path().join("%2e%2e").join("events").join("0.offset"),
        b"x",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("billing").join("events").join("007.offset"),
        b"x",
    )
    .unwrap();

    keys.sort();
    assert_eq!(store.keys().await.unwrap(), keys);
}

#[tokio::test]
async fn an_empty_store_lists_no_keys() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileOffsetStore::open(dir.path()).await.unwrap();
    assert_eq!(store.keys().await.unwrap(), Vec::<OffsetKey>::new());
}
