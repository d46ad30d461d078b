//! A FETCH response must fit in one frame, so its payload is at most
//! `MAX_FRAME_BYTES − 18` bytes: 6 of response header and 12 of `highWatermark` + `payloadBytes`.
//!
//! A broker that sends `min(maxBytes, rest of segment)` without this cap, answering a client that
//! asked for a full 8 MiB, writes a frame of 8 MiB + 18 bytes, which every client must treat as
//! lost framing and close the connection on. These tests pin the arithmetic the broker and the
//! client must both apply.

use booblik_protocol::{
    Decoded, FETCH_RESPONSE_HEADER_BYTES, LEN_PREFIX_BYTES, MAX_FETCH_PAYLOAD_BYTES,
    MAX_FRAME_BYTES, WireError, check_frame, decode_response_frame, encode_fetch_response_header,
};

#[test]
fn the_fetch_header_takes_18_bytes_of_the_frame() {
    assert_eq!(FETCH_RESPONSE_HEADER_BYTES - LEN_PREFIX_BYTES, 18);
    assert_eq!(MAX_FETCH_PAYLOAD_BYTES, 8 * 1024 * 1024 - 18);
    assert_eq!(
        MAX_FETCH_PAYLOAD_BYTES,
        MAX_FRAME_BYTES - (FETCH_RESPONSE_HEADER_BYTES - LEN_PREFIX_BYTES)
    );
}

#[test]
fn a_payload_of_8_mib_minus_18_bytes_is_one_legal_frame() {
    let mut frame = Vec::with_capacity(FETCH_RESPONSE_HEADER_BYTES + MAX_FETCH_PAYLOAD_BYTES);
    encode_fetch_response_header(1, 0, MAX_FETCH_PAYLOAD_BYTES as u32, &mut frame);
    frame.resize(FETCH_RESPONSE_HEADER_BYTES + MAX_FETCH_PAYLOAD_BYTES, 0);
    match decode_response_frame(&frame) {
        Ok(Decoded::Complete { value, used }) => {
            assert_eq!(used, frame.len());
            assert_eq!(value.body.len(), 12 + MAX_FETCH_PAYLOAD_BYTES);
        }
        other => panic!("expected a whole frame, got {other:?}"),
    }
}

#[test]
fn a_payload_one_byte_larger_loses_framing() {
    let mut header = Vec::new();
    encode_fetch_response_header(1, 0, MAX_FETCH_PAYLOAD_BYTES as u32 + 1, &mut header);
    let err = check_frame(&header, MAX_FRAME_BYTES).expect_err("the frame is one byte too long");
    assert_eq!(
        err,
        WireError::FrameLengthOutOfRange {
            len: MAX_FRAME_BYTES as i32 + 1,
            max: MAX_FRAME_BYTES
        }
    );
    assert!(err.closes_connection());
}
