//! Decoding a PRODUCE or a FETCH answer from a `Bytes` frame copies no record bytes: the
//! decoded `RecordSet`, each payload in it, and the FETCH payload all point into the buffer the
//! frame was read into. This is what lets the broker append a batch straight from its read
//! buffer and the client hand out records that share the socket read's allocation.
//!
//! The check compares addresses: a copy would live in another allocation, outside the range of
//! the read buffer.

#[path = "common/strategies.rs"]
#[allow(dead_code)] // shared strategies: this file needs the PRODUCE and FETCH ones
mod strategies;

use booblik_protocol::{
    Decoded, FetchResponse, MAX_FRAME_BYTES, Request, RequestBody, WireMessage, encode_response,
    split_request_frame, split_response_frame,
};
use bytes::BytesMut;
use proptest::prelude::*;

/// The address range of `buf`'s bytes.
fn range_of(buf: &[u8]) -> std::ops::Range<usize> {
    let start = buf.as_ptr() as usize;
    start..start + buf.len()
}

/// True when `inner` lies within `outer` (an empty slice anywhere inside counts).
fn lies_within(inner: &[u8], outer: &std::ops::Range<usize>) -> bool {
    let inner = range_of(inner);
    outer.start <= inner.start && inner.end <= outer.end
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_produce_requests_records_are_slices_of_the_read_buffer(
        produce in strategies::produce_request(),
        correlation_id in any::<i32>(),
    ) {
        let request = Request { correlation_id, body: RequestBody::Produce(produce) };
        let mut buf = BytesMut::with_capacity(request.encoded_len());
        request.encode(&mut buf);
        let read_buffer = range_of(&buf);
        let Ok(Decoded::Complete { value: Ok(decoded), .. }) = split_request_frame(&mut buf) else {
            panic!("a valid PRODUCE decodes");
        };
        let RequestBody::Produce(decoded) = decoded.body else { panic!("a PRODUCE") };
        prop_assert!(lies_within(decoded.records.wire_bytes(), &read_buffer), "the set was copied");
        for payload in &decoded.records {
            prop_assert!(lies_within(payload, &read_buffer), "a payload was copied");
        }
    }

    #[test]
    fn a_fetch_payload_is_a_slice_of_the_read_buffer(
        response in strategies::fetch_response(),
        correlation_id in any::<i32>(),
    ) {
        let mut buf = BytesMut::new();
        encode_response(correlation_id, &response, &mut buf);
        let read_buffer = range_of(&buf);
        let Ok(Decoded::Complete { value: frame, .. }) = split_response_frame(&mut buf, MAX_FRAME_BYTES)
        else {
            panic!("a whole response frame");
        };
        let (decoded, _) = FetchResponse::decode_bytes(&frame.body).expect("a valid FETCH body");
        prop_assert_eq!(&decoded, &response);
        prop_assert!(lies_within(&decoded.payload, &read_buffer), "the payload was copied");
    }
}

/// The slice-taking decoder, by contrast, does copy: the check above can tell the difference.
#[test]
fn the_slice_decoder_copies_and_the_check_sees_it() {
    let response = FetchResponse {
        high_watermark: 1,
        payload: bytes::Bytes::from_static(b"abc"),
    };
    let mut body = Vec::new();
    response.encode(&mut body);
    let (decoded, _) = FetchResponse::decode(&body).unwrap();
    assert!(!lies_within(&decoded.payload, &range_of(&body)));
}
