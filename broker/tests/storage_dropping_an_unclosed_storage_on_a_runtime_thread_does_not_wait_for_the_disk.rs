//! Dropping a storage nobody closed, on a runtime thread, returns at once: the writers' final
//! fsyncs are waited for by a thread of their own, not by the runtime thread (where they would
//! hold up every task). The data directory stays locked until the last writer has stopped.

mod storage_support;

use std::sync::Arc;
use std::time::Duration;

use booblik_broker::storage::{RealIo, StorageError, WriteMode};
use booblik_protocol::AckPolicy;
use storage_support::{config_with_sim, open, partition, records};

/// How long the drop may take before it counts as waiting for the disk.
const DROP_BOUND: Duration = Duration::from_secs(5);
/// How long the writer may take to stop once the disk is back.
const STOP_BOUND: Duration = Duration::from_secs(30);

#[test]
fn dropping_an_unclosed_storage_on_a_runtime_thread_returns_while_the_disk_is_stalled() {
    let dir = tempfile::tempdir().unwrap();
    let (config, disk) = config_with_sim(dir.path(), WriteMode::File, 1 << 20);
    let storage = open(&config).unwrap();
    let stall = disk.stall();
    let (dropped_tx, dropped_rx) = std::sync::mpsc::channel();
    let dropper = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            // The writer takes this batch and stalls inside its write.
            partition(&storage)
                .append(records(&[b"queued"]), AckPolicy::None)
                .await
                .unwrap();
            drop(storage);
            dropped_tx.send(()).unwrap();
        });
    });
    assert!(
        dropped_rx.recv_timeout(DROP_BOUND).is_ok(),
        "dropping the storage on a runtime thread waited for the stalled disk"
    );
    dropper.join().unwrap();
    // The writer still holds the directory. (Asked over the real file system: every call
    // through the stalled one would wait.)
    let mut real = config.clone();
    real.io = Arc::new(RealIo);
    assert!(matches!(
        open(&real),
        Err(StorageError::DataDirLocked { .. })
    ));
    drop(stall);
    let deadline = std::time::Instant::now() + STOP_BOUND;
    let reopened = loop {
        match open(&config) {
            Ok(storage) => break storage,
            Err(StorageError::DataDirLocked { .. }) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(error) => panic!("reopening failed: {error}"),
        }
    };
    // The queued batch was written and synced by the writer's own close.
    assert_eq!(partition(&reopened).high_watermark(), 1);
    reopened.close().unwrap();
}
