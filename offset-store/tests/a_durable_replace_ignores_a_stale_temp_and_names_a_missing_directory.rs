//! `durable_file::replace`: the temp file a crash left behind is truncated, not appended to or
//! read; and a file in a directory that does not exist is an error that names the temp file,
//! with nothing created.

use booblik_offset_store::{IoStep, OffsetStoreError, durable_file};

#[test]
fn a_stale_temp_file_is_overwritten_and_the_new_bytes_replace_the_old() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.json");
    durable_file::replace(&path, b"old").unwrap();
    std::fs::write(
        durable_file::temp_path(&path),
        b"a torn write left by a crash",
    )
    .unwrap();
    durable_file::replace(&path, b"new").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"new");
    assert!(
        !durable_file::temp_path(&path).exists(),
        "the temp file was renamed over the real one"
    );
}

#[test]
fn a_missing_directory_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing").join("state.json");
    let error = durable_file::replace(&path, b"x").unwrap_err();
    match &error {
        OffsetStoreError::Io {
            step, path: named, ..
        } => {
            assert_eq!(*step, IoStep::WriteTemp);
            assert_eq!(named, &durable_file::temp_path(&path));
        }
        other => panic!("expected an I/O error, got {other}"),
    }
    assert!(error.to_string().contains("state.json.tmp"), "{error}");
    assert!(!dir.path().join("missing").exists());
}

#[tokio::test]
async fn the_async_replace_writes_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.json");
    durable_file::replace_async(path.clone(), b"async".to_vec())
        .await
        .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"async");
}
