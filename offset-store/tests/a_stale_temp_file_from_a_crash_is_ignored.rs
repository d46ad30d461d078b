//! A crash between writing the temp file and renaming it leaves `<partition>.offset.tmp`
//! behind. It is never read (the previous position stands), and it is cleaned up.

use booblik_offset_store::{FileOffsetStore, OffsetStore};

#[tokio::test]
async fn a_stale_temp_file_is_ignored_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileOffsetStore::open(dir.path()).await.unwrap();
    store.save("billing", "events", 0, 12).await.unwrap();
    let file = store.file_path("billing", "events", 0).unwrap();
    let temp = file.with_extension("offset.tmp");
    drop(store);

    // What a crash mid-write leaves: a torn temp file next to the intact one.
    std::fs::write(&temp, b"BOFS\0\x01 torn").unwrap();

    let reopened = FileOffsetStore::open(dir.path()).await.unwrap();
    assert_eq!(
        reopened.load("billing", "events", 0).await.unwrap(),
        Some(12)
    );
    assert!(
        !temp.exists(),
        "the first touch of the key removes its stale temp file"
    );
    assert_eq!(
        reopened.keys().await.unwrap().len(),
        1,
        "a temp file is not a key"
    );

    reopened.save("billing", "events", 0, 13).await.unwrap();
    assert_eq!(
        reopened.load("billing", "events", 0).await.unwrap(),
        Some(13)
    );
    assert!(!temp.exists(), "a completed save leaves no temp file");
}

#[tokio::test]
async fn a_stale_temp_file_without_a_saved_position_loads_as_none() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileOffsetStore::open(dir.path()).await.unwrap();
    let file = store.file_path("billing", "events", 0).unwrap();
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    // A crash during the very first save of the key.
    std::fs::write(file.with_extension("offset.tmp"), b"").unwrap();
    assert_eq!(store.load("billing", "events", 0).await.unwrap(), None);
}
