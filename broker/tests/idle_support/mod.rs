//! Bringing a partition to idle, the state an inline append needs. Shared by `support` and
//! `storage_support` (included by path: each integration test file is a crate of its own).

use booblik_broker::storage::Partition;

/// Waits (at most 10 s) until `partition` is idle: nothing queued, the writer thread between
/// groups. What an append needs to be written inline.
pub async fn wait_until_idle(partition: &Partition) {
    for _ in 0..10_000 {
        if partition.is_idle() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    panic!("the partition stayed busy for 10 s");
}
