//! A segment retention retired while a FETCH still pins it is unlinked when the last pin drops
//! — and when that drop happens on a runtime thread, the unlink goes to the blocking pool
//! instead of holding up the runtime while the disk is slow.

mod storage_support;

use std::time::Duration;

use booblik_broker::storage::WriteMode;
use booblik_protocol::AckPolicy;
use storage_support::{config_with_sim, open, partition, partition_dir, payload, records};

/// How long dropping the pin may take before it counts as waiting for the disk.
const DROP_BOUND: Duration = Duration::from_secs(5);
/// How long the unlink may take once the disk is back.
const UNLINK_BOUND: Duration = Duration::from_secs(30);

fn deleted_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(partition_dir(dir))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".deleted")
        })
        .count()
}

#[test]
fn dropping_the_last_pin_on_a_runtime_thread_does_not_wait_for_the_unlink() {
    let dir = tempfile::tempdir().unwrap();
    let (mut config, disk) = config_with_sim(dir.path(), WriteMode::File, 1024);
    config.retention_bytes = Some(1);
    let storage = open(&config).unwrap();
    let partition = partition(&storage);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let pin = runtime.block_on(async {
        // Three segments of one record each: the first two are sealed.
        for n in 0..3 {
            partition
                .append(records(&[payload(n, 900)]), AckPolicy::Written)
                .await
                .unwrap();
        }
        let pin = partition.read(0, 1 << 20).unwrap();
        assert_eq!(partition.enforce_retention().await.unwrap(), 2);
        pin
    });
    // Segment 1 nobody pinned is gone; segment 0 waits for its pin, renamed.
    assert_eq!(deleted_files(dir.path()), 1);

    let stall = disk.stall();
    let (dropped_tx, dropped_rx) = std::sync::mpsc::channel();
    let dropper = std::thread::spawn(move || {
        runtime.block_on(async move {
            drop(pin);
            dropped_tx.send(()).unwrap();
        });
        runtime
    });
    assert!(
        dropped_rx.recv_timeout(DROP_BOUND).is_ok(),
        "dropping the last pin on a runtime thread waited for the stalled unlink"
    );
    assert_eq!(
        deleted_files(dir.path()),
        1,
        "unlinked while the disk stalls"
    );
    drop(stall);
    let runtime = dropper.join().unwrap();
    let deadline = std::time::Instant::now() + UNLINK_BOUND;
    while deleted_files(dir.path()) > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the retired segment was never unlinked"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(runtime);
    storage.close().unwrap();
}
