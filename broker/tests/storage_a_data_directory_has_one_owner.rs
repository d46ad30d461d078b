//! A data directory is locked while a storage has it open, so two brokers never write the same
//! segments; the lock is released when the storage is closed or dropped.

mod storage_support;

use booblik_broker::storage::{StorageError, WriteMode};
use storage_support::{config, open};

#[test]
fn a_second_storage_on_the_same_directory_is_refused_until_the_first_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), WriteMode::File, 1 << 20);
    let first = open(&config).unwrap();
    match open(&config) {
        Err(StorageError::DataDirLocked { path }) => {
            assert_eq!(
                path,
                dir.path().join(booblik_broker::storage::LOCK_FILE_NAME)
            );
        }
        other => panic!("expected DataDirLocked, got {other:?}"),
    }
    first.close().unwrap();
    let second = open(&config).unwrap();
    second.close().unwrap();
    drop(second);
    // Dropping without closing releases it too.
    drop(open(&config).unwrap());
    open(&config).unwrap().close().unwrap();
}
