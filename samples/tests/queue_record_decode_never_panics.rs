//! Decoding arbitrary bytes returns a typed error (or a record), never a panic.

use booblik_samples::queue::record::{Claim, ClaimsRecord, DecodeError, FORMAT_VERSION, Task};
use proptest::prelude::*;
use uuid::Uuid;

const MAX_GARBAGE_BYTES: usize = 512;

fn valid_claim() -> ClaimsRecord {
    ClaimsRecord::Claim(Claim {
        task_id: Uuid::from_u128(1),
        worker_id: Uuid::from_u128(2),
        claimed_at_ms: 1_700_000_000_000,
        lease_ms: 30_000,
    })
}

fn valid_task() -> Task {
    Task {
        task_id: Uuid::from_u128(1),
        payload: b"resize image 42".to_vec(),
        submitted_at_ms: 1_700_000_000_000,
    }
}

#[test]
fn empty_input_is_an_empty_error() {
    assert!(matches!(Task::decode(&[]), Err(DecodeError::Empty)));
    assert!(matches!(ClaimsRecord::decode(&[]), Err(DecodeError::Empty)));
}

#[test]
fn an_unknown_version_is_refused_before_the_body_is_read() {
    let mut bytes = valid_claim().encode();
    bytes[0] = FORMAT_VERSION + 1;
    assert!(matches!(
        ClaimsRecord::decode(&bytes),
        Err(DecodeError::UnsupportedVersion { found }) if found == FORMAT_VERSION + 1
    ));
}

#[test]
fn trailing_bytes_after_a_whole_record_are_an_error() {
    let mut bytes = valid_task().encode();
    bytes.extend_from_slice(&[0, 0, 0]);
    assert!(matches!(
        Task::decode(&bytes),
        Err(DecodeError::TrailingBytes { count: 3 })
    ));
}

#[test]
fn an_unknown_claims_variant_is_malformed() {
    let mut bytes = valid_claim().encode();
    bytes[1] = 0x7F; // a one-byte varint naming no variant (they are 0..=4)
    assert!(matches!(
        ClaimsRecord::decode(&bytes),
        Err(DecodeError::Malformed(_))
    ));
}

#[test]
fn every_truncation_of_a_record_is_an_error() {
    let claim = valid_claim().encode();
    for len in 0..claim.len() {
        assert!(ClaimsRecord::decode(&claim[..len]).is_err(), "prefix {len}");
    }
    let task = valid_task().encode();
    for len in 0..task.len() {
        assert!(Task::decode(&task[..len]).is_err(), "prefix {len}");
    }
}

/// Whatever the bytes, decoding returns; and anything accepted is a real record: it starts with
/// the supported version and survives a re-encode unchanged.
fn check_decodes_sanely(bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(task) = Task::decode(bytes) {
        prop_assert_eq!(bytes[0], FORMAT_VERSION);
        prop_assert_eq!(
            Task::decode(&task.encode()).expect("re-encoding decodes"),
            task
        );
    }
    if let Ok(record) = ClaimsRecord::decode(bytes) {
        prop_assert_eq!(bytes[0], FORMAT_VERSION);
        prop_assert_eq!(
            ClaimsRecord::decode(&record.encode()).expect("re-encoding decodes"),
            record
        );
    }
    Ok(())
}

proptest! {
    #[test]
    fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..MAX_GARBAGE_BYTES)) {
        check_decodes_sanely(&bytes)?;
    }

    #[test]
    fn garbage_behind_a_valid_version_byte_never_panics(
        body in proptest::collection::vec(any::<u8>(), 0..MAX_GARBAGE_BYTES),
    ) {
        let mut bytes = vec![FORMAT_VERSION];
        bytes.extend_from_slice(&body);
        check_decodes_sanely(&bytes)?;
    }

    #[test]
    fn a_corrupted_record_decodes_or_fails_without_panicking(
        position in any::<prop::sample::Index>(),
        flip in 1_u8..=255,
    ) {
        let mut bytes = valid_claim().encode();
        let at = position.index(bytes.len());
        bytes[at] ^= flip;
        check_decodes_sanely(&bytes)?;
    }
}
