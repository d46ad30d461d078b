//! Every request and response decodes back into the value it was encoded from, using exactly
//! the bytes the encoder said it would write.
//!
//! `encoded_len` is what a writer uses to size buffers and length prefixes, and `used` is what a
//! reader uses to find the next frame on a pipelined connection, so both must equal the real
//! byte count, not merely decode correctly.

#[path = "common/strategies.rs"]
mod strategies;

use booblik_protocol::{
    Decoded, ErrorCode, FetchRequest, FetchResponse, LEN_PREFIX_BYTES, MAX_FRAME_BYTES,
    MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse, RESPONSE_HEADER_BYTES,
    ResponseHeader, WireMessage, decode_request_frame, decode_response_frame,
    encode_error_response, encode_response, split_request_frame, split_response_frame,
};
use bytes::{BufMut, BytesMut};
use proptest::prelude::*;

/// Cases per property: enough to cover every variant many times, small enough for seconds.
const CASES: u32 = 256;

/// Encodes a body alone and decodes it back.
fn assert_body_round_trips<M>(message: &M)
where
    M: WireMessage + PartialEq + std::fmt::Debug,
{
    let mut buf = Vec::new();
    message.encode(&mut buf);
    assert_eq!(buf.len(), message.encoded_len());
    let (decoded, used) = M::decode(&buf).expect("a valid body decodes");
    assert_eq!(&decoded, message);
    assert_eq!(used, buf.len());
}

/// Encodes a successful response frame and decodes it back through the frame decoder.
fn assert_response_round_trips<M>(correlation_id: i32, message: &M)
where
    M: WireMessage + PartialEq + std::fmt::Debug,
{
    let mut frame = Vec::new();
    encode_response(correlation_id, message, &mut frame);
    assert_eq!(
        frame.len(),
        LEN_PREFIX_BYTES + RESPONSE_HEADER_BYTES + message.encoded_len()
    );
    let Ok(Decoded::Complete { value, used }) = decode_response_frame(&frame) else {
        panic!("a whole response frame decodes");
    };
    assert_eq!(used, frame.len());
    assert_eq!(
        value.header,
        ResponseHeader {
            correlation_id,
            error_code: ErrorCode::None
        }
    );
    let (decoded, body_used) = M::decode(value.body).expect("a valid body decodes");
    assert_eq!(&decoded, message);
    assert_eq!(body_used, value.body.len());

    // The zero-copy path decodes the same frame to the same value.
    let mut buf = BytesMut::from(&frame[..]);
    let Ok(Decoded::Complete { value, used }) = split_response_frame(&mut buf, MAX_FRAME_BYTES)
    else {
        panic!("a whole response frame splits off");
    };
    assert_eq!((used, buf.len()), (frame.len(), 0));
    let (decoded, body_used) = M::decode_bytes(&value.body).expect("a valid body decodes");
    assert_eq!(&decoded, message);
    assert_eq!(body_used, value.body.len());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn every_request_frame_round_trips(request in strategies::request()) {
        let mut frame = Vec::new();
        request.encode(&mut frame);
        prop_assert_eq!(frame.len(), request.encoded_len());
        let decoded = decode_request_frame(&frame);
        prop_assert_eq!(
            decoded,
            Ok(Decoded::Complete { value: Ok(request.clone()), used: frame.len() })
        );
        // The zero-copy path, with the next frame's first bytes behind it.
        let mut buf = BytesMut::from(&frame[..]);
        buf.put_slice(&[0, 0]);
        let split = split_request_frame(&mut buf);
        prop_assert_eq!(split, Ok(Decoded::Complete { value: Ok(request), used: frame.len() }));
        prop_assert_eq!(&buf[..], &[0u8, 0][..]);
    }

    #[test]
    fn a_vectored_encoding_is_the_same_bytes(request in strategies::request()) {
        let mut whole = Vec::new();
        request.encode(&mut whole);
        let mut head = Vec::new();
        let tail = request.encode_vectored(&mut head);
        if let Some(tail) = &tail {
            head.extend_from_slice(tail);
        }
        prop_assert_eq!(tail.is_some(), request.api_key() == booblik_protocol::ApiKey::Produce);
        prop_assert_eq!(head, whole);
    }

    #[test]
    fn every_produce_request_body_round_trips(body in strategies::produce_request()) {
        assert_body_round_trips::<ProduceRequest>(&body);
    }

    #[test]
    fn every_fetch_v1_request_body_round_trips(body in strategies::fetch_request()) {
        // `WireMessage::decode` reads the v1 layout; v2 needs the header's version (covered by
        // the whole-frame property above).
        let v1 = FetchRequest { long_poll: None, ..body };
        assert_body_round_trips::<FetchRequest>(&v1);
    }

    #[test]
    fn every_metadata_request_body_round_trips(body in strategies::metadata_request()) {
        assert_body_round_trips::<MetadataRequest>(&body);
    }

    #[test]
    fn every_produce_response_round_trips(
        correlation_id in any::<i32>(),
        body in strategies::produce_response(),
    ) {
        assert_response_round_trips::<ProduceResponse>(correlation_id, &body);
    }

    #[test]
    fn every_fetch_response_round_trips(
        correlation_id in any::<i32>(),
        body in strategies::fetch_response(),
    ) {
        assert_response_round_trips::<FetchResponse>(correlation_id, &body);
    }

    #[test]
    fn every_metadata_response_round_trips(
        correlation_id in any::<i32>(),
        body in strategies::metadata_response(),
    ) {
        assert_response_round_trips::<MetadataResponse>(correlation_id, &body);
    }

    #[test]
    fn every_error_response_round_trips(
        correlation_id in any::<i32>(),
        code in proptest::sample::select(&ErrorCode::ALL[1..]),
    ) {
        let mut frame = Vec::new();
        encode_error_response(correlation_id, code, &mut frame);
        prop_assert_eq!(frame.len(), LEN_PREFIX_BYTES + RESPONSE_HEADER_BYTES);
        let Ok(Decoded::Complete { value, used }) = decode_response_frame(&frame) else {
            panic!("a whole response frame decodes");
        };
        prop_assert_eq!(used, frame.len());
        prop_assert_eq!(value.header, ResponseHeader { correlation_id, error_code: code });
        prop_assert!(value.body.is_empty());
    }
}
