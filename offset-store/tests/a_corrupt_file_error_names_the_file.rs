//! When a position cannot be trusted, the error says which file, so an operator can act on it.

use booblik_offset_store::{FileOffsetStore, FormatError, OffsetStore, OffsetStoreError};

#[tokio::test]
async fn a_corrupt_file_error_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileOffsetStore::open(dir.path()).await.unwrap();
    store.save("billing", "events", 2, 12).await.unwrap();

    // Find the file by walking the directory, independently of the store's own path logic.
    let consumer_dir = dir.path().join("billing");
    let file = consumer_dir.join("events").join("2.offset");
    assert!(file.is_file(), "expected {} to exist", file.display());
    std::fs::write(&file, b"12\n").unwrap(); // what a text-format store might have held

    let error = store.load("billing", "events", 2).await.unwrap_err();
    match &error {
        OffsetStoreError::Corrupt { path, problem } => {
            assert_eq!(path, &file);
            assert_eq!(problem, &FormatError::TooShort { len: 3 });
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    let message = error.to_string();
    assert!(
        message.contains(&file.display().to_string()),
        "the message must name the file: {message}"
    );
}

#[tokio::test]
async fn a_file_copied_under_another_key_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileOffsetStore::open(dir.path()).await.unwrap();
    store.save("billing", "events", 0, 12).await.unwrap();
    let source = store.file_path("billing", "events", 0).unwrap();
    let target = store.file_path("billing", "events", 1).unwrap();
    std::fs::copy(&source, &target).unwrap();

    match store.load("billing", "events", 1).await.unwrap_err() {
        OffsetStoreError::Corrupt {
            path,
            problem: FormatError::WrongKey { expected, found },
        } => {
            assert_eq!(path, target);
            assert_eq!(expected.partition(), 1);
            assert_eq!(found.partition(), 0);
        }
        other => panic!("expected Corrupt(WrongKey), got {other:?}"),
    }
}
