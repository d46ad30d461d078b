//! The FNV-1a partitioner is checked against the cross-language golden vectors, row by row, and
//! the legacy Java-hash vectors show that a wrong partitioner is caught.
//!
//! Per-key ordering across languages holds only if every client sends a key to the same
//! partition. A client that reads bytes as signed, or uses another hash, routes some keys
//! elsewhere without any error; these vectors are the only thing that notices.

#[path = "common/vectors.rs"]
mod vectors;

use booblik_protocol::{fnv1a32, partition_for_key};
use vectors::{VectorRow, VectorTable};

const FNV1A_TSV: &str = include_str!("vectors/partitioner-fnv1a.tsv");
const JAVAHASH_TSV: &str = include_str!("vectors/partitioner-javahash.tsv");

/// Data rows in each partitioner file (pinned: the empty key is an empty leading field, and a
/// reader that loses it must fail).
const PARTITIONER_ROWS: usize = 11;

/// The partition-count columns, `p<count>`.
const PARTITION_COLUMNS: [(&str, u32); 6] = [
    ("p1", 1),
    ("p2", 2),
    ("p3", 3),
    ("p4", 4),
    ("p16", 16),
    ("p64", 64),
];

/// True when `row` agrees with our hash and with our partition for every count.
fn row_agrees_with(row: &VectorRow<'_>, hash: impl Fn(&[u8]) -> u32) -> bool {
    let key = row.hex("keyHex");
    let h = hash(&key);
    h == row.u32("hash")
        && PARTITION_COLUMNS
            .iter()
            .all(|(column, count)| h % count == row.u32(column))
}

#[test]
fn every_fnv1a_vector_row_matches_the_hash_and_every_partition_count() {
    let table = VectorTable::parse(FNV1A_TSV);
    assert_eq!(
        table.columns(),
        [
            "keyHex", "hash", "p1", "p2", "p3", "p4", "p16", "p64", "name"
        ]
    );
    assert_eq!(table.rows().len(), PARTITIONER_ROWS);
    for row in table.rows() {
        let key = row.hex("keyHex");
        let what = format!("line {} ({})", row.line_number, row.text("name"));
        assert_eq!(fnv1a32(&key), row.u32("hash"), "{what}");
        for (column, count) in PARTITION_COLUMNS {
            assert_eq!(
                partition_for_key(&key, count),
                row.u32(column),
                "{what}, {count} partitions"
            );
        }
    }
}

#[test]
fn the_empty_key_hashes_to_the_offset_basis() {
    let table = VectorTable::parse(FNV1A_TSV);
    let row = table.row_named("empty");
    assert!(row.hex("keyHex").is_empty());
    assert_eq!(row.u32("hash"), 0x811C_9DC5);
    assert_eq!(fnv1a32(&[]), row.u32("hash"));
}

#[test]
fn the_java_hash_vectors_disagree_with_our_partitioner_on_the_0x80_row() {
    let java = VectorTable::parse(JAVAHASH_TSV);
    assert_eq!(java.rows().len(), PARTITIONER_ROWS);
    let row = java.row_named("0x80 — first byte a signed reading gets wrong");
    assert_eq!(row.hex("keyHex"), [0x80]);
    assert!(
        !row_agrees_with(row, fnv1a32),
        "our partitioner must not satisfy the legacy Java-hash vectors"
    );
    // Not only the hash: at least one partition assignment differs, so keys really move.
    let differing_counts: Vec<u32> = PARTITION_COLUMNS
        .iter()
        .filter(|(column, count)| partition_for_key(&[0x80], *count) != row.u32(column))
        .map(|(_, count)| *count)
        .collect();
    assert!(!differing_counts.is_empty());
}

#[test]
fn a_signed_byte_reading_of_fnv1a_fails_the_vectors() {
    // The classic cross-language bug: a signed byte sign-extended before the xor.
    let signed_fnv1a = |key: &[u8]| {
        key.iter().fold(0x811C_9DC5_u32, |hash, &byte| {
            (hash ^ (i32::from(byte as i8) as u32)).wrapping_mul(0x0100_0193)
        })
    };
    let table = VectorTable::parse(FNV1A_TSV);
    assert!(row_agrees_with(
        table.row_named("0x7f — last byte a signed reading gets right"),
        signed_fnv1a
    ));
    assert!(!row_agrees_with(
        table.row_named("0x80 — first byte a signed reading gets wrong"),
        signed_fnv1a
    ));
}
