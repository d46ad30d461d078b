//! Choosing a partition: the shared key partitioner, and round-robin for keyless records.
//!
//! The key never reaches the broker; the client picks the partition and sends its number. So
//! every client in every language must pick the same partition for the same key, or per-key
//! order is silently gone. The rule (FNV-1a 32-bit over the unsigned bytes, unsigned remainder)
//! lives in `booblik_protocol::partition_for_key` and is checked against the golden vectors; this
//! file only maps its index onto the partition ids METADATA reported.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use booblik_protocol::partition_for_key;

/// Picks partitions of one topic. Clones share the round-robin position.
#[derive(Debug, Clone)]
pub struct Partitioner {
    /// Partition ids in METADATA order (sorted by id).
    ids: Arc<[i32]>,
    next: Arc<AtomicUsize>,
}

impl Partitioner {
    /// A partitioner over these partition ids (sorted, as METADATA reports them).
    ///
    /// # Panics
    /// When `ids` is empty: a topic always has at least one partition.
    pub fn new(ids: impl Into<Arc<[i32]>>) -> Self {
        let ids = ids.into();
        assert!(!ids.is_empty(), "a topic has at least one partition");
        Self {
            ids,
            next: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Number of partitions.
    pub fn partition_count(&self) -> u32 {
        self.ids.len() as u32
    }

    /// The partition of `key`: FNV-1a 32-bit, unsigned remainder by the partition count.
    pub fn for_key(&self, key: &[u8]) -> i32 {
        self.ids[partition_for_key(key, self.partition_count()) as usize]
    }

    /// The next partition in round-robin order, for records without a key.
    pub fn round_robin(&self) -> i32 {
        let index = self.next.fetch_add(1, Ordering::Relaxed) % self.ids.len();
        self.ids[index]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_visits_every_partition_in_turn() {
        let p = Partitioner::new(vec![0, 1, 2]);
        let picks: Vec<i32> = (0..6).map(|_| p.round_robin()).collect();
        assert_eq!(picks, vec![0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn keys_use_the_fnv1a_partitioner() {
        let p = Partitioner::new(vec![0, 1, 2]);
        // From the golden vectors: "user-1" is partition 1 of 3, 0x80 is partition 0.
        assert_eq!(p.for_key(b"user-1"), 1);
        assert_eq!(p.for_key(&[0x80]), 0);
    }
}
