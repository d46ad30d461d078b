//! Fuzz target: the RecordScanner on arbitrary bytes (a FETCH payload or a segment's contents).
//!
//! Invariants beyond "does not panic": records are yielded contiguously from byte 0, each
//! inside the buffer; the scanner's position is the end of the last record; the reported end
//! (`ScanEnd::position`) is that same position; and a finished scanner stays finished.

#![no_main]

use booblik_protocol::{RecordScanner, ScanEnd};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut scanner = RecordScanner::new(data);
    let mut expected_position = 0;
    for record in scanner.by_ref() {
        assert_eq!(record.position, expected_position, "records are contiguous");
        expected_position += record.encoded_len();
        assert!(
            expected_position <= data.len(),
            "a record ends inside the buffer"
        );
        // Exercise the CRC path too; its answer is the caller's business.
        let _ = record.crc_matches();
    }
    assert_eq!(scanner.position(), expected_position);
    let end = scanner
        .end()
        .expect("the iterator returned None, so the scan has ended");
    assert_eq!(end.position(data.len()), expected_position);
    if let ScanEnd::Partial { available, .. } = end {
        assert!(available >= 1 && expected_position + available == data.len());
    }
    assert!(
        scanner.next().is_none(),
        "a finished scanner stays finished"
    );
});
