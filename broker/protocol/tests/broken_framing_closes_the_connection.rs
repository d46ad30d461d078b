//! A length prefix of 0, a negative one, or one above 8 MiB closes the connection unanswered.
//!
//! Once the length prefix is wrong the reader no longer knows where the next frame starts, so
//! no answer could be matched to a request: the only safe move is to close. These tests write
//! the prefixes as bytes and check that both the request and the response decoders refuse them
//! as connection-closing, as soon as the four prefix bytes are in, before any body arrives.

#[path = "common/hex_frames.rs"]
#[allow(dead_code)] // shared helpers: this file needs only `hex_bytes`
mod hex_frames;

use booblik_protocol::{
    Decoded, MAX_FRAME_BYTES, WireError, check_frame, decode_request_frame, decode_response_frame,
};
use hex_frames::hex_bytes;

/// Prefixes that lose framing, with the length each one reads as.
fn out_of_range_prefixes() -> Vec<(Vec<u8>, i32)> {
    vec![
        (hex_bytes("00000000"), 0),
        (hex_bytes("ffffffff"), -1),
        (hex_bytes("80000000"), i32::MIN),
        // 8 MiB + 1 = 0x0080_0001.
        (hex_bytes("00800001"), 8 * 1024 * 1024 + 1),
        (hex_bytes("7fffffff"), i32::MAX),
    ]
}

#[test]
fn out_of_range_request_lengths_close_the_connection() {
    for (prefix, len) in out_of_range_prefixes() {
        // Followed by a plausible header, to show the prefix alone decides.
        let mut frame = prefix.clone();
        frame.extend(hex_bytes("0003 0001 0000002a 00000000"));
        let err = decode_request_frame(&frame).expect_err("framing is lost");
        assert_eq!(
            err,
            WireError::FrameLengthOutOfRange {
                len,
                max: MAX_FRAME_BYTES
            }
        );
        assert!(err.closes_connection(), "len {len}");
    }
}

#[test]
fn out_of_range_response_lengths_close_the_connection() {
    for (prefix, len) in out_of_range_prefixes() {
        let mut frame = prefix.clone();
        frame.extend(hex_bytes("0000002a 0000"));
        let err = decode_response_frame(&frame).expect_err("framing is lost");
        assert_eq!(
            err,
            WireError::FrameLengthOutOfRange {
                len,
                max: MAX_FRAME_BYTES
            }
        );
        assert!(err.closes_connection(), "len {len}");
    }
}

#[test]
fn a_hostile_length_is_refused_before_its_body_arrives() {
    // Only the four prefix bytes: a reader must not wait for (or allocate) 2 GiB first.
    for (prefix, len) in out_of_range_prefixes() {
        assert_eq!(
            check_frame(&prefix, MAX_FRAME_BYTES),
            Err(WireError::FrameLengthOutOfRange {
                len,
                max: MAX_FRAME_BYTES
            })
        );
        assert!(decode_request_frame(&prefix).is_err());
        assert!(decode_response_frame(&prefix).is_err());
    }
}

#[test]
fn exactly_8_mib_is_a_legal_length_that_waits_for_its_body() {
    let prefix = hex_bytes("00800000");
    assert_eq!(MAX_FRAME_BYTES, 0x0080_0000);
    assert_eq!(
        decode_request_frame(&prefix),
        Ok(Decoded::Incomplete {
            need: MAX_FRAME_BYTES
        })
    );
    assert_eq!(
        decode_response_frame(&prefix),
        Ok(Decoded::Incomplete {
            need: MAX_FRAME_BYTES
        })
    );
}

#[test]
fn every_other_wire_error_keeps_the_connection() {
    let kept = [
        WireError::ShortFrame { len: 3, need: 8 },
        WireError::UnexpectedEnd {
            what: "PRODUCE request",
            offset: 0,
            need: 1,
            have: 0,
        },
        WireError::TrailingBytes {
            what: "METADATA request",
            offset: 4,
            trailing: 1,
        },
        WireError::UnsupportedVersion {
            api_key: 9,
            api_version: 1,
        },
        WireError::InvalidField {
            field: "maxBytes",
            value: 0,
            reason: "must be at least 1",
        },
        WireError::TopicNameNotUtf8,
    ];
    for err in kept {
        assert!(!err.closes_connection(), "{err}");
    }
}
