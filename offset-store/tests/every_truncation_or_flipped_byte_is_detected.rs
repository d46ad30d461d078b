//! A damaged offset file is an error naming the file, never `None` and never a wrong number:
//! every truncation of a valid file (including the empty file) and every single flipped byte.

use std::path::Path;

use booblik_offset_store::{FileOffsetStore, OffsetStore, OffsetStoreError};
use proptest::prelude::*;

/// Generated keys per property; each case checks every truncation or every byte of its file.
const CASES: u32 = 32;

/// Saves `offset` for the key in a fresh store and returns the store, its file and the file's
/// valid bytes.
async fn saved_file(
    dir: &Path,
    consumer: &str,
    topic: &str,
    partition: i32,
    offset: i64,
) -> (FileOffsetStore, std::path::PathBuf, Vec<u8>) {
    let store = FileOffsetStore::open(dir).await.unwrap();
    store
        .save(consumer, topic, partition, offset)
        .await
        .unwrap();
    let path = store.file_path(consumer, topic, partition).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    (store, path, bytes)
}

/// Loads the key and checks the result is `Corrupt` for exactly `path`.
async fn assert_corrupt(
    store: &FileOffsetStore,
    consumer: &str,
    topic: &str,
    partition: i32,
    path: &Path,
    what: &str,
) -> Result<(), TestCaseError> {
    match store.load(consumer, topic, partition).await {
        Err(OffsetStoreError::Corrupt { path: named, .. }) => {
            prop_assert_eq!(named, path, "{}", what);
            Ok::<(), TestCaseError>(())
        }
        other => Err(TestCaseError::fail(format!(
            "{what}: expected Corrupt, got {other:?}"
        ))),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn every_truncation_of_a_valid_file_is_detected(
        consumer in "\\PC{1,16}",
        topic in "[A-Za-z0-9._-]{1,16}",
        partition in 0..1024_i32,
        offset in 0..=i64::MAX,
    ) {
        runtime().block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let (store, path, valid) = saved_file(dir.path(), &consumer, &topic, partition, offset).await;
            for len in 0..valid.len() {
                std::fs::write(&path, &valid[..len]).unwrap();
                assert_corrupt(&store, &consumer, &topic, partition, &path, &format!("cut to {len} bytes")).await?;
            }
            std::fs::write(&path, &valid).unwrap();
            prop_assert_eq!(store.load(&consumer, &topic, partition).await.unwrap(), Some(offset));
            Ok::<(), TestCaseError>(())
        })?;
    }

    #[test]
    fn every_flipped_byte_is_detected(
        consumer in "\\PC{1,16}",
        topic in "[A-Za-z0-9._-]{1,16}",
        partition in 0..1024_i32,
        offset in 0..=i64::MAX,
        flip_mask in 1..=u8::MAX,
    ) {
        runtime().block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let (store, path, valid) = saved_file(dir.path(), &consumer, &topic, partition, offset).await;
            for index in 0..valid.len() {
                let mut damaged = valid.clone();
                damaged[index] ^= flip_mask;
                std::fs::write(&path, &damaged).unwrap();
                assert_corrupt(&store, &consumer, &topic, partition, &path, &format!("byte {index} ^ {flip_mask:#04x}")).await?;
            }
            Ok::<(), TestCaseError>(())
        })?;
    }

    #[test]
    fn bytes_appended_to_a_valid_file_are_detected(
        offset in 0..=i64::MAX,
        extra in proptest::collection::vec(any::<u8>(), 1..64),
    ) {
        runtime().block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let (store, path, mut bytes) = saved_file(dir.path(), "billing", "events", 0, offset).await;
            bytes.extend_from_slice(&extra);
            std::fs::write(&path, &bytes).unwrap();
            assert_corrupt(&store, "billing", "events", 0, &path, "appended bytes").await
        })?;
    }
}
