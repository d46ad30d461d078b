//! The RecordScanner yields exactly the records that were encoded, and says precisely how the
//! bytes ended.
//!
//! A FETCH payload is raw segment bytes cut at maxBytes, so a client sees whole records followed
//! by a piece of one; recovery sees whole records followed by zeroes or a torn write. Both rely
//! on the scanner to stop at the right byte and to report why, so the next FETCH (or the
//! truncation) starts at the right place.

#[path = "common/strategies.rs"]
#[allow(dead_code)] // shared strategies: this file needs only the payload ones
mod strategies;

use booblik_protocol::{RECORD_HEADER_BYTES, RecordScanner, ScanEnd, encode_record};
use proptest::collection::vec;
use proptest::prelude::*;

/// Cases per property.
const CASES: u32 = 256;

/// The records encoded back to back, and the byte position where each one ends.
fn encode_all(payloads: &[Vec<u8>]) -> (Vec<u8>, Vec<usize>) {
    let mut buf = Vec::new();
    let mut ends = Vec::new();
    for payload in payloads {
        encode_record(payload, &mut buf);
        ends.push(buf.len());
    }
    (buf, ends)
}

/// Scans `buf` to its end, returning the payloads found and how the scan ended.
fn scan(buf: &[u8]) -> (Vec<Vec<u8>>, ScanEnd, usize) {
    let mut scanner = RecordScanner::new(buf);
    let payloads = scanner.by_ref().map(|r| {
        assert!(r.crc_matches(), "record at {} has a bad crc", r.position);
        r.payload.to_vec()
    });
    let payloads: Vec<Vec<u8>> = payloads.collect();
    let end = scanner.end().expect("the scan has ended");
    (payloads, end, scanner.position())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn concatenated_records_are_yielded_exactly_and_end_clean(
        payloads in vec(strategies::payload(), 0..=strategies::MAX_RECORDS),
    ) {
        let (buf, _) = encode_all(&payloads);
        let (found, end, position) = scan(&buf);
        prop_assert_eq!(found, payloads);
        prop_assert_eq!(end, ScanEnd::Clean);
        prop_assert_eq!(position, buf.len());
    }

    #[test]
    fn a_truncated_buffer_yields_the_whole_records_and_a_partial_end(
        payloads in strategies::payloads(),
        cut in any::<prop::sample::Index>(),
    ) {
        let (buf, ends) = encode_all(&payloads);
        let cut = cut.index(buf.len()); // strictly inside the buffer
        let (found, end, position) = scan(&buf[..cut]);

        let whole = ends.iter().take_while(|&&e| e <= cut).count();
        let boundary = if whole == 0 { 0 } else { ends[whole - 1] };
        prop_assert_eq!(&found[..], &payloads[..whole]);
        prop_assert_eq!(position, boundary);
        let available = cut - boundary;
        let expected_end = if available == 0 {
            ScanEnd::Clean
        } else {
            ScanEnd::Partial {
                position: boundary,
                // The length field is readable once its four bytes are in.
                declared_len: (available >= 4).then(|| payloads[whole].len()),
                available,
            }
        };
        prop_assert_eq!(end, expected_end);
    }

    #[test]
    fn zeroes_after_the_records_end_the_scan_as_unwritten_space(
        payloads in strategies::payloads(),
        zeroes in RECORD_HEADER_BYTES..=64_usize,
    ) {
        let (mut buf, _) = encode_all(&payloads);
        let written = buf.len();
        buf.resize(written + zeroes, 0);
        let (found, end, position) = scan(&buf);
        prop_assert_eq!(found, payloads);
        prop_assert_eq!(end, ScanEnd::ZeroLength { position: written });
        prop_assert_eq!(position, written);
    }
}

#[test]
fn a_negative_length_ends_the_scan_where_it_stands() {
    let (mut buf, _) = encode_all(&[b"ok".to_vec()]);
    buf.extend_from_slice(&(-5_i32).to_be_bytes());
    buf.extend_from_slice(&[0xAA; 12]);
    let (found, end, position) = scan(&buf);
    assert_eq!(found, vec![b"ok".to_vec()]);
    assert_eq!(
        end,
        ScanEnd::NegativeLength {
            position: 10,
            length: -5
        }
    );
    assert_eq!(position, 10);
}

#[test]
fn a_record_with_a_bad_crc_is_still_yielded_for_the_caller_to_judge() {
    let (mut buf, _) = encode_all(&[b"payload".to_vec()]);
    buf[RECORD_HEADER_BYTES] ^= 0x01;
    let record = RecordScanner::new(&buf).next().expect("a whole record");
    assert_eq!(record.payload, b"qayload");
    assert!(!record.crc_matches());
}
