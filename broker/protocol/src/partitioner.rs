//! The key partitioner every booblik client shares.
//!
//! FNV-1a 32-bit over the key's **unsigned** bytes, then the **unsigned** remainder by the
//! partition count. Any signed reading (a `byte` in Java, a signed modulo) silently sends some
//! keys to other partitions than every other client, which breaks per-key ordering across
//! languages; the golden vectors include the bytes where that happens.

const FNV_OFFSET_BASIS: u32 = 0x811C_9DC5;
const FNV_PRIME: u32 = 0x0100_0193;

/// FNV-1a 32-bit hash of `key`.
pub fn fnv1a32(key: &[u8]) -> u32 {
    key.iter().fold(FNV_OFFSET_BASIS, |hash, &byte| {
        (hash ^ u32::from(byte)).wrapping_mul(FNV_PRIME)
    })
}

/// The partition of `key` among `partition_count` partitions.
///
/// # Panics
/// When `partition_count` is zero: a topic always has at least one partition.
pub fn partition_for_key(key: &[u8], partition_count: u32) -> u32 {
    assert!(partition_count > 0, "a topic has at least one partition");
    fnv1a32(key) % partition_count
}
