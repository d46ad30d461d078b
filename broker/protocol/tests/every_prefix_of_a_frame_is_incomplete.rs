//! Every strict prefix of a valid frame decodes as "incomplete", never as an error or a panic.
//!
//! TCP delivers a frame in arbitrary pieces. A decoder that judged a frame before it was whole
//! would refuse valid requests (or, worse, close the connection) depending on how the network
//! happened to split the bytes. The missing-byte count must also be honest: a reader that trusts
//! `need` must never be asked for more bytes than the frame has left.

#[path = "common/strategies.rs"]
mod strategies;

use booblik_protocol::{
    Decoded, ErrorCode, WireError, WireMessage, decode_request_frame, decode_response_frame,
    encode_error_response, encode_response,
};
use proptest::prelude::*;

/// Cases per property; each case checks every prefix of its frame.
const CASES: u32 = 128;

/// Checks one prefix's answer: `Incomplete` with a `need` that is positive and no more than
/// the bytes really missing.
fn assert_honestly_incomplete<T: std::fmt::Debug>(
    answer: Result<Decoded<T>, WireError>,
    prefix_len: usize,
    frame_len: usize,
) {
    match answer {
        Ok(Decoded::Incomplete { need }) => {
            assert!(need >= 1, "prefix {prefix_len}: need 0");
            assert!(
                prefix_len + need <= frame_len,
                "prefix {prefix_len} of {frame_len}: asks for {need} more"
            );
        }
        other => panic!("prefix {prefix_len} of {frame_len}: expected Incomplete, got {other:?}"),
    }
}

/// A successful response frame, encoded.
fn encoded_response<M: WireMessage>(correlation_id: i32, body: &M) -> Vec<u8> {
    let mut frame = Vec::new();
    encode_response(correlation_id, body, &mut frame);
    frame
}

/// An error response frame, encoded.
fn encoded_error_response(correlation_id: i32, code: ErrorCode) -> Vec<u8> {
    let mut frame = Vec::new();
    encode_error_response(correlation_id, code, &mut frame);
    frame
}

/// Any valid response frame, encoded.
fn response_frame() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        (any::<i32>(), strategies::produce_response()).prop_map(|(id, b)| encoded_response(id, &b)),
        (any::<i32>(), strategies::fetch_response()).prop_map(|(id, b)| encoded_response(id, &b)),
        (any::<i32>(), strategies::metadata_response())
            .prop_map(|(id, b)| encoded_response(id, &b)),
        (any::<i32>(), proptest::sample::select(&ErrorCode::ALL[1..]))
            .prop_map(|(id, code)| encoded_error_response(id, code)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn every_strict_prefix_of_a_request_frame_is_incomplete(request in strategies::request()) {
        let mut frame = Vec::new();
        request.encode(&mut frame);
        for prefix_len in 0..frame.len() {
            assert_honestly_incomplete(
                decode_request_frame(&frame[..prefix_len]),
                prefix_len,
                frame.len(),
            );
        }
        // And the whole frame is not incomplete.
        let whole = decode_request_frame(&frame);
        prop_assert!(matches!(whole, Ok(Decoded::Complete { value: Ok(_), .. })), "{:?}", whole);
    }

    #[test]
    fn every_strict_prefix_of_a_response_frame_is_incomplete(frame in response_frame()) {
        for prefix_len in 0..frame.len() {
            assert_honestly_incomplete(
                decode_response_frame(&frame[..prefix_len]),
                prefix_len,
                frame.len(),
            );
        }
        let whole = decode_response_frame(&frame);
        prop_assert!(matches!(whole, Ok(Decoded::Complete { .. })), "{:?}", whole);
    }
}
