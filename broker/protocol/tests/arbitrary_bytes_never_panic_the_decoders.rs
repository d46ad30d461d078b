//! No sequence of bytes makes a decoder panic, and a well-framed frame is always answerable.
//!
//! Everything a broker reads comes from the network and everything a client reads may come from
//! a broken or hostile broker, so a decoder must return an error for any input, never panic,
//! never loop and never allocate by a count it has not checked against the bytes present. The
//! cargo-fuzz targets in `fuzz/` run the same checks for much longer; these properties keep a
//! quick version in every `cargo test`.

#[path = "common/strategies.rs"]
#[allow(dead_code)] // shared strategies: this file needs only the request ones
mod strategies;

use booblik_protocol::{
    Decoded, FetchResponse, LEN_PREFIX_BYTES, MetadataResponse, ProduceResponse,
    REQUEST_HEADER_BYTES, RecordScanner, WireMessage, decode_request_frame, decode_response_frame,
};
use proptest::collection::vec;
use proptest::prelude::*;

/// Cases per property.
const CASES: u32 = 512;
/// Longest arbitrary input.
const MAX_INPUT_BYTES: usize = 512;

/// Decodes `body` as `M`; a success must account for every byte.
fn decode_body_as<M: WireMessage>(body: &[u8]) {
    if let Ok((_, used)) = M::decode(body) {
        assert_eq!(used, body.len());
    }
}

/// Runs every request-side check on `buf`: no panic, and a decoded request re-encodes to the
/// exact frame bytes (the encoding is canonical, so a broker and a proxy never disagree).
fn check_request_decoder(buf: &[u8]) {
    if let Ok(Decoded::Complete { value, used }) = decode_request_frame(buf) {
        assert!(used <= buf.len());
        if let Ok(request) = value {
            let mut again = Vec::new();
            request.encode(&mut again);
            assert_eq!(again, &buf[..used]);
        }
    }
}

/// Runs every response-side check on `buf`: no panic for the frame or for its body read as
/// each response type.
fn check_response_decoder(buf: &[u8]) {
    if let Ok(Decoded::Complete { value, used }) = decode_response_frame(buf) {
        assert!(used <= buf.len());
        decode_body_as::<ProduceResponse>(value.body);
        decode_body_as::<FetchResponse>(value.body);
        decode_body_as::<MetadataResponse>(value.body);
    }
}

/// Scans `buf` and checks the scanner's bookkeeping: records are contiguous from 0, and the end
/// position is where the last record ended.
fn check_scanner(buf: &[u8]) {
    let mut scanner = RecordScanner::new(buf);
    let mut expected_position = 0;
    for record in scanner.by_ref() {
        assert_eq!(record.position, expected_position);
        expected_position += record.encoded_len();
        assert!(expected_position <= buf.len());
    }
    assert_eq!(scanner.position(), expected_position);
    let end = scanner.end().expect("the scan has ended");
    assert_eq!(end.position(buf.len()), expected_position);
    assert_eq!(scanner.next(), None, "a finished scanner stays finished");
}

/// A frame with a correct length prefix and a header naming a real or nearly-real request,
/// followed by arbitrary body bytes: this reaches the body decoders, which random prefixes
/// almost never do.
fn framed_garbage() -> impl Strategy<Value = Vec<u8>> {
    (
        0_i16..=4,
        0_i16..=3,
        any::<i32>(),
        vec(any::<u8>(), 0..=MAX_INPUT_BYTES),
    )
        .prop_map(|(api_key, api_version, correlation_id, body)| {
            let mut frame =
                Vec::with_capacity(LEN_PREFIX_BYTES + REQUEST_HEADER_BYTES + body.len());
            frame.extend_from_slice(&((REQUEST_HEADER_BYTES + body.len()) as i32).to_be_bytes());
            frame.extend_from_slice(&api_key.to_be_bytes());
            frame.extend_from_slice(&api_version.to_be_bytes());
            frame.extend_from_slice(&correlation_id.to_be_bytes());
            frame.extend_from_slice(&body);
            frame
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn arbitrary_bytes_never_panic_any_decoder(buf in vec(any::<u8>(), 0..=MAX_INPUT_BYTES)) {
        check_request_decoder(&buf);
        check_response_decoder(&buf);
        check_scanner(&buf);
    }

    #[test]
    fn a_well_framed_request_is_always_answered_never_dropped(frame in framed_garbage()) {
        // The length prefix is right, so whatever the body holds the broker can answer it
        // (success or an error code) and keep the connection.
        match decode_request_frame(&frame) {
            Ok(Decoded::Complete { used, .. }) => prop_assert_eq!(used, frame.len()),
            other => prop_assert!(false, "expected a complete frame, got {:?}", other),
        }
        check_request_decoder(&frame);
    }

    #[test]
    fn arbitrary_response_bodies_never_panic(body in vec(any::<u8>(), 0..=MAX_INPUT_BYTES)) {
        decode_body_as::<ProduceResponse>(&body);
        decode_body_as::<FetchResponse>(&body);
        decode_body_as::<MetadataResponse>(&body);
    }

    #[test]
    fn a_valid_request_with_one_byte_changed_never_panics(
        request in strategies::request(),
        index in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let mut frame = Vec::new();
        request.encode(&mut frame);
        let at = index.index(frame.len());
        frame[at] = byte;
        check_request_decoder(&frame);
        if at >= LEN_PREFIX_BYTES {
            // The prefix is intact, so the frame is still whole and must be answered.
            let complete = matches!(decode_request_frame(&frame), Ok(Decoded::Complete { .. }));
            prop_assert!(complete);
        }
    }
}
