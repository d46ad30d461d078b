//! Invalid input is refused before anything is written, with an error that says what is wrong,
//! and the same way by the file store and the in-memory store.

use booblik_offset_store::{
    FileOffsetStore, InMemoryOffsetStore, KeyProblem, MAX_ENCODED_NAME_BYTES, OffsetStore,
    OffsetStoreError,
};

/// A store of each kind, in a fresh directory.
async fn stores(dir: &std::path::Path) -> Vec<(&'static str, Box<dyn OffsetStore>)> {
    vec![
        ("file", Box::new(FileOffsetStore::open(dir).await.unwrap())),
        ("memory", Box::new(InMemoryOffsetStore::new())),
    ]
}

fn key_problem(result: Result<impl std::fmt::Debug, OffsetStoreError>) -> KeyProblem {
    match result {
        Err(OffsetStoreError::InvalidKey { problem, .. }) => problem,
        other => panic!("expected InvalidKey, got {other:?}"),
    }
}

#[tokio::test]
async fn invalid_keys_are_refused_naming_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let plain_too_long = "c".repeat(MAX_ENCODED_NAME_BYTES + 1);
    // 100 slashes are 100 bytes but 300 once escaped.
    let escaped_too_long = "/".repeat(100);
    for (kind, store) in stores(dir.path()).await {
        assert_eq!(
            key_problem(store.save("", "events", 0, 1).await),
            KeyProblem::EmptyConsumer,
            "{kind}"
        );
        assert_eq!(
            key_problem(store.load("billing", "", 0).await),
            KeyProblem::EmptyTopic,
            "{kind}"
        );
        assert_eq!(
            key_problem(store.save("billing", "events", -1, 1).await),
            KeyProblem::NegativePartition,
            "{kind}"
        );
        assert_eq!(
            key_problem(store.save(&plain_too_long, "events", 0, 1).await),
            KeyProblem::ConsumerTooLong {
                encoded_bytes: MAX_ENCODED_NAME_BYTES + 1
            },
            "{kind}"
        );
        assert_eq!(
            key_problem(store.load(&escaped_too_long, "events", 0).await),
            KeyProblem::ConsumerTooLong { encoded_bytes: 300 },
            "{kind}"
        );
        assert_eq!(
            key_problem(store.save("billing", &escaped_too_long, 0, 1).await),
            KeyProblem::TopicTooLong { encoded_bytes: 300 },
            "{kind}"
        );
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing was written"
    );
}

#[tokio::test]
async fn the_longest_allowed_name_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let longest = "c".repeat(MAX_ENCODED_NAME_BYTES);
    for (kind, store) in stores(dir.path()).await {
        store.save(&longest, &longest, 0, 5).await.unwrap();
        assert_eq!(
            store.load(&longest, &longest, 0).await.unwrap(),
            Some(5),
            "{kind}"
        );
    }
}

#[tokio::test]
async fn a_negative_offset_is_refused_and_the_saved_one_kept() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, store) in stores(dir.path()).await {
        store.save("billing", "events", 0, 12).await.unwrap();
        let error = store.save("billing", "events", 0, -1).await.unwrap_err();
        assert!(
            matches!(error, OffsetStoreError::NegativeOffset { offset: -1, .. }),
            "{kind}: {error:?}"
        );
        assert!(
            error.to_string().contains("negative offset -1"),
            "{kind}: {error}"
        );
        assert_eq!(
            store.load("billing", "events", 0).await.unwrap(),
            Some(12),
            "{kind}"
        );
    }
}

#[test]
fn an_invalid_key_error_message_says_what_is_wrong() {
    let error = booblik_offset_store::OffsetKey::new("billing", "events", -3).unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid offset key (consumer \"billing\", topic \"events\", partition -3): the partition is negative"
    );
}
