//! A record must be fetchable: its 8-byte header and payload must fit one FETCH payload
//! (`MAX_FETCH_PAYLOAD_BYTES`), or no FETCH can ever return it and every consumer stops at it
//! for good. So the largest record payload is `MAX_FETCH_PAYLOAD_BYTES − 8` = 8 MiB − 26 bytes.
//!
//! A PRODUCE frame to a topic of 1 or 2 characters has room for a payload 2 or 1 bytes larger
//! than that; such a record must be refused (RECORD_TOO_LARGE by the broker, up front by a
//! client), and a `RecordSet` cannot be built with one.

use booblik_protocol::{
    AckPolicy, MAX_FETCH_PAYLOAD_BYTES, MAX_FRAME_BYTES, MAX_RECORD_PAYLOAD_BYTES, ProduceRequest,
    RECORD_HEADER_BYTES, RecordSet, RecordSetBuilder, Request, RequestBody, TopicName, WireError,
    record_bytes,
};

#[test]
fn the_largest_record_with_its_header_is_exactly_the_largest_fetch_payload() {
    assert_eq!(MAX_RECORD_PAYLOAD_BYTES, 8 * 1024 * 1024 - 26);
    assert_eq!(
        record_bytes(MAX_RECORD_PAYLOAD_BYTES),
        MAX_FETCH_PAYLOAD_BYTES
    );
    assert_eq!(
        MAX_RECORD_PAYLOAD_BYTES + RECORD_HEADER_BYTES,
        MAX_FETCH_PAYLOAD_BYTES
    );
}

#[test]
fn a_record_set_holds_a_payload_of_exactly_the_largest_record() {
    let set = RecordSet::from_payloads([vec![0xAB; MAX_RECORD_PAYLOAD_BYTES]]).unwrap();
    assert_eq!(set.max_payload_len(), MAX_RECORD_PAYLOAD_BYTES);
    // With a one-character topic it fits a PRODUCE frame, with room to spare.
    let request = Request {
        correlation_id: 1,
        body: RequestBody::Produce(ProduceRequest {
            topic: TopicName::new("a").unwrap(),
            partition: 0,
            ack: AckPolicy::Written,
            records: set,
        }),
    };
    let frame_bytes = request.encoded_len() - 4;
    assert_eq!(frame_bytes, MAX_FRAME_BYTES - 2);
}

#[test]
fn a_payload_one_byte_larger_is_refused_by_the_record_set_builder() {
    let mut builder = RecordSetBuilder::new();
    let err = builder
        .push(&vec![0xAB; MAX_RECORD_PAYLOAD_BYTES + 1])
        .expect_err("no FETCH could return this record");
    assert!(
        matches!(err, WireError::InvalidField { field: "record size", value, .. }
            if value == (MAX_RECORD_PAYLOAD_BYTES + 1) as i64),
        "{err:?}"
    );
    assert!(err.to_string().contains("FETCH"), "{err}");
    assert!(
        builder.is_empty(),
        "a refused payload must leave nothing behind"
    );
    assert!(RecordSet::from_payloads([vec![0xAB; MAX_RECORD_PAYLOAD_BYTES + 1]]).is_err());
}
