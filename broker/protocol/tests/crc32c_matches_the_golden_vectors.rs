//! CRC-32C is checked against the cross-language golden vectors, row by row.
//!
//! Every booblik client verifies the CRC of every fetched record, so a broker and a client that
//! disagree about the checksum (zlib's CRC-32 instead of Castagnoli, say) would reject every
//! record. The vectors are the shared ground truth.

#[path = "common/vectors.rs"]
mod vectors;

use booblik_protocol::{RECORD_HEADER_BYTES, crc32c, encode_record};
use vectors::VectorTable;

const CRC32C_TSV: &str = include_str!("vectors/crc32c.tsv");

/// Data rows in `crc32c.tsv`. Pinned so a reader that drops rows (the empty payload is an
/// empty leading field) cannot pass by checking fewer of them.
const CRC32C_ROWS: usize = 8;

#[test]
fn every_crc32c_vector_row_matches() {
    let table = VectorTable::parse(CRC32C_TSV);
    assert_eq!(table.columns(), ["payloadHex", "crc32c", "name"]);
    assert_eq!(table.rows().len(), CRC32C_ROWS);
    for row in table.rows() {
        let payload = row.hex("payloadHex");
        assert_eq!(
            crc32c(&payload),
            row.u32("crc32c"),
            "line {} ({})",
            row.line_number,
            row.text("name")
        );
    }
}

#[test]
fn the_empty_payload_row_is_read_and_checksums_to_zero() {
    let table = VectorTable::parse(CRC32C_TSV);
    let row = table.row_named("empty");
    assert!(row.hex("payloadHex").is_empty());
    assert_eq!(crc32c(&row.hex("payloadHex")), row.u32("crc32c"));
}

#[test]
fn the_check_value_of_123456789_is_e3069283() {
    // The catalogue check value of CRC-32C, as SPEC §2 states it.
    assert_eq!(crc32c(b"123456789"), 0xE306_9283);
}

#[test]
fn an_encoded_record_carries_the_vector_crc_of_its_payload() {
    let table = VectorTable::parse(CRC32C_TSV);
    for row in table.rows() {
        let payload = row.hex("payloadHex");
        if payload.is_empty() {
            continue; // empty records do not exist; the crc row is still checked above
        }
        let mut record = Vec::new();
        encode_record(&payload, &mut record);
        let stored = u32::from_be_bytes(record[4..8].try_into().unwrap());
        assert_eq!(stored, row.u32("crc32c"), "line {}", row.line_number);
        assert_eq!(&record[RECORD_HEADER_BYTES..], payload.as_slice());
    }
}
