//! Every error rule of SPEC §2 that a frame alone can break, checked on hand-written bytes.
//!
//! A malformed request inside a well-framed frame is *answered* (CORRUPT_REQUEST or
//! UNSUPPORTED_VERSION) with the request's correlationId, and the connection carries on after
//! the frame. Only a frame too short to hold the header is answered with correlationId 0,
//! because there is no correlationId to echo. Each test names the rule it breaks; the frames
//! are literals written from the layout, so the rules are pinned independently of the encoder.

#[path = "common/hex_frames.rs"]
mod hex_frames;

use booblik_protocol::{
    ApiKey, Decoded, ErrorCode, RequestBody, RequestError, TopicNameError, WireError,
    decode_request_frame,
};
use hex_frames::whole_frame;

/// The correlationId every frame below carries (0x2a).
const CORRELATION_ID: i32 = 42;

/// Decodes a frame that must be refused, and checks what every refusal shares: the frame is
/// consumed whole (the connection can go on after it) and the error does not close it.
fn refused(literal: &str) -> RequestError {
    let frame = whole_frame(literal);
    match decode_request_frame(&frame) {
        Ok(Decoded::Complete {
            value: Err(err),
            used,
        }) => {
            assert_eq!(used, frame.len(), "the whole frame is consumed");
            assert!(!err.error.closes_connection(), "{err}");
            err
        }
        other => panic!("expected a refused request, got {other:?}"),
    }
}

/// Decodes a frame that must be accepted.
fn accepted(literal: &str) -> RequestBody {
    let frame = whole_frame(literal);
    match decode_request_frame(&frame) {
        Ok(Decoded::Complete {
            value: Ok(request),
            used,
        }) => {
            assert_eq!(used, frame.len());
            assert_eq!(request.correlation_id, CORRELATION_ID);
            request.body
        }
        other => panic!("expected an accepted request, got {other:?}"),
    }
}

/// Checks a CORRUPT_REQUEST answered with the request's correlationId.
fn assert_corrupt(err: &RequestError, api_key: ApiKey) {
    assert_eq!(err.correlation_id, CORRELATION_ID, "{err}");
    assert_eq!(err.error_code(), ErrorCode::CorruptRequest, "{err}");
    assert_eq!(err.api_key, Some(api_key), "{err}");
}

/// Checks a CORRUPT_REQUEST caused by `field` holding `value`.
fn assert_invalid_field(err: &RequestError, api_key: ApiKey, field: &str, value: i64) {
    assert_corrupt(err, api_key);
    match &err.error {
        WireError::InvalidField {
            field: f, value: v, ..
        } => assert_eq!((*f, *v), (field, value), "{err}"),
        other => panic!("expected {field} = {value} to be refused, got {other}"),
    }
}

/// Checks a CORRUPT_REQUEST caused by a field running past the end of the frame.
fn assert_runs_past_the_end(err: &RequestError, api_key: ApiKey) {
    assert_corrupt(err, api_key);
    assert!(
        matches!(err.error, WireError::UnexpectedEnd { .. }),
        "expected UnexpectedEnd, got {}",
        err.error
    );
}

// ---- PRODUCE v1: topic "t", partition 0 ----

#[test]
fn an_empty_record_is_corrupt() {
    let err =
        refused("00000018 | 0001 0001 0000002a | 0001 74 | 00000000 | 01 | 00000001 | 00000000");
    assert_invalid_field(&err, ApiKey::Produce, "record size", 0);
    // Also when it follows a valid record.
    let err = refused(
        "0000001d | 0001 0001 0000002a | 0001 74 | 00000000 | 01 | 00000002 | 00000001 61 | 00000000",
    );
    assert_invalid_field(&err, ApiKey::Produce, "record size", 0);
}

#[test]
fn a_record_count_of_zero_or_less_is_corrupt() {
    for (count_hex, count) in [
        ("00000000", 0),
        ("ffffffff", -1),
        ("80000000", i64::from(i32::MIN)),
    ] {
        let err = refused(&format!(
            "00000014 | 0001 0001 0000002a | 0001 74 | 00000000 | 01 | {count_hex}"
        ));
        assert_invalid_field(&err, ApiKey::Produce, "recordCount", count);
    }
}

#[test]
fn a_negative_record_size_is_corrupt() {
    let err =
        refused("00000018 | 0001 0001 0000002a | 0001 74 | 00000000 | 01 | 00000001 | ffffffff");
    assert_invalid_field(&err, ApiKey::Produce, "record size", -1);
}

#[test]
fn record_sizes_overrunning_the_frame_are_corrupt() {
    // A size of 5 with 2 bytes left.
    let err = refused(
        "0000001a | 0001 0001 0000002a | 0001 74 | 00000000 | 01 | 00000001 | 00000005 6162",
    );
    assert_runs_past_the_end(&err, ApiKey::Produce);
    // Two records promised, one present.
    let err =
        refused("00000019 | 0001 0001 0000002a | 0001 74 | 00000000 | 01 | 00000002 | 00000001 61");
    assert_runs_past_the_end(&err, ApiKey::Produce);
    // A 2 GiB size with 1 byte left: refused without reading (or allocating) it.
    let err =
        refused("00000019 | 0001 0001 0000002a | 0001 74 | 00000000 | 01 | 00000001 | 7fffffff 61");
    assert_runs_past_the_end(&err, ApiKey::Produce);
}

#[test]
fn an_unknown_ack_policy_is_corrupt() {
    for (ack_hex, ack) in [("03", 3), ("ff", -1), ("80", -128)] {
        let err = refused(&format!(
            "00000019 | 0001 0001 0000002a | 0001 74 | 00000000 | {ack_hex} | 00000001 | 00000001 61"
        ));
        assert_invalid_field(&err, ApiKey::Produce, "ackPolicy", ack);
    }
}

#[test]
fn the_three_ack_policies_are_accepted() {
    for ack_hex in ["00", "01", "02"] {
        let body = accepted(&format!(
            "00000019 | 0001 0001 0000002a | 0001 74 | 00000000 | {ack_hex} | 00000001 | 00000001 61"
        ));
        assert!(matches!(body, RequestBody::Produce(_)));
    }
}

// ---- FETCH v1 / v2: topic "t", partition 0 ----

#[test]
fn a_negative_fetch_offset_is_corrupt() {
    let err =
        refused("0000001b | 0002 0001 0000002a | 0001 74 | 00000000 | ffffffffffffffff | 00001000");
    assert_invalid_field(&err, ApiKey::Fetch, "fetchOffset", -1);
    let err = refused(
        "00000023 | 0002 0002 0000002a | 0001 74 | 00000000 | 8000000000000000 | 00001000 | 00000000 | 00000000",
    );
    assert_invalid_field(&err, ApiKey::Fetch, "fetchOffset", i64::MIN);
}

#[test]
fn max_bytes_of_zero_or_less_is_corrupt() {
    for (max_hex, max) in [("00000000", 0), ("ffffffff", -1)] {
        let err = refused(&format!(
            "0000001b | 0002 0001 0000002a | 0001 74 | 00000000 | 0000000000000000 | {max_hex}"
        ));
        assert_invalid_field(&err, ApiKey::Fetch, "maxBytes", max);
    }
}

#[test]
fn a_negative_max_wait_is_corrupt() {
    let err = refused(
        "00000023 | 0002 0002 0000002a | 0001 74 | 00000000 | 0000000000000000 | 00001000 | ffffffff | 00000000",
    );
    assert_invalid_field(&err, ApiKey::Fetch, "maxWaitMillis", -1);
}

#[test]
fn a_negative_min_bytes_is_corrupt() {
    let err = refused(
        "00000023 | 0002 0002 0000002a | 0001 74 | 00000000 | 0000000000000000 | 00001000 | 00000000 | ffffffff",
    );
    assert_invalid_field(&err, ApiKey::Fetch, "minBytes", -1);
}

#[test]
fn min_bytes_above_max_bytes_is_corrupt() {
    // maxBytes 16, minBytes 17: such a request could never be answered.
    let err = refused(
        "00000023 | 0002 0002 0000002a | 0001 74 | 00000000 | 0000000000000000 | 00000010 | 000001f4 | 00000011",
    );
    assert_invalid_field(&err, ApiKey::Fetch, "minBytes", 17);
}

#[test]
fn fetch_fields_at_the_edges_of_their_rules_are_accepted() {
    // fetchOffset 0, maxBytes 1.
    let body = accepted(
        "0000001b | 0002 0001 0000002a | 0001 74 | 00000000 | 0000000000000000 | 00000001",
    );
    assert!(matches!(body, RequestBody::Fetch(ref f) if f.long_poll.is_none()));
    // maxWait 0, minBytes 0; and minBytes == maxBytes.
    for (max_wait_hex, min_hex) in [("00000000", "00000000"), ("00000000", "00000010")] {
        let body = accepted(&format!(
            "00000023 | 0002 0002 0000002a | 0001 74 | 00000000 | 0000000000000000 | 00000010 | {max_wait_hex} | {min_hex}"
        ));
        assert!(matches!(body, RequestBody::Fetch(ref f) if f.long_poll.is_some()));
    }
}

// ---- apiKey / apiVersion ----

#[test]
fn an_unknown_api_key_or_version_is_unsupported_with_the_request_correlation_id() {
    let cases: [(&str, &str, i16, i16, Option<ApiKey>); 10] = [
        ("0000", "0001", 0, 1, None),
        ("0004", "0001", 4, 1, None),
        ("ffff", "0001", -1, 1, None),
        ("0001", "0000", 1, 0, Some(ApiKey::Produce)),
        ("0001", "0002", 1, 2, Some(ApiKey::Produce)),
        ("0002", "0000", 2, 0, Some(ApiKey::Fetch)),
        ("0002", "0003", 2, 3, Some(ApiKey::Fetch)),
        ("0003", "0000", 3, 0, Some(ApiKey::Metadata)),
        ("0003", "0002", 3, 2, Some(ApiKey::Metadata)),
        ("0003", "ffff", 3, -1, Some(ApiKey::Metadata)),
    ];
    for (key_hex, version_hex, api_key, api_version, known) in cases {
        // The body is a valid METADATA v1 body: the frame is fine, only the pair is unknown.
        let err = refused(&format!(
            "0000000c | {key_hex} {version_hex} 0000002a | 00000000"
        ));
        assert_eq!(err.correlation_id, CORRELATION_ID);
        assert_eq!(err.error_code(), ErrorCode::UnsupportedVersion);
        assert_eq!(err.api_key, known);
        assert_eq!(
            err.error,
            WireError::UnsupportedVersion {
                api_key,
                api_version
            }
        );
    }
}

#[test]
fn a_frame_shorter_than_the_header_is_corrupt_with_correlation_id_zero() {
    for literal in [
        "00000001 | 00",
        "00000003 | 000100",
        // Seven bytes: three of the four correlationId bytes are there, and still not echoed.
        "00000007 | 0001 0001 000000",
    ] {
        let err = refused(literal);
        assert_eq!(err.correlation_id, 0, "{literal}");
        assert_eq!(err.error_code(), ErrorCode::CorruptRequest);
        assert_eq!(err.api_key, None);
        assert!(matches!(err.error, WireError::ShortFrame { need: 8, .. }));
    }
}

// ---- trailing bytes ----

#[test]
fn bytes_after_the_body_are_corrupt() {
    let cases = [
        // METADATA (all topics) + one stray byte.
        (
            "0000000d | 0003 0001 0000002a | 00000000 | 00",
            ApiKey::Metadata,
            1,
        ),
        // A FETCH v2 body under a v1 header: the long-poll fields are 8 stray bytes.
        (
            "00000023 | 0002 0001 0000002a | 0001 74 | 00000000 | 0000000000000000 | 00001000 | 00000000 | 00000001",
            ApiKey::Fetch,
            8,
        ),
        // PRODUCE with one record and a stray byte after it.
        (
            "0000001a | 0001 0001 0000002a | 0001 74 | 00000000 | 01 | 00000001 | 00000001 61 | ff",
            ApiKey::Produce,
            1,
        ),
    ];
    for (literal, api_key, trailing_bytes) in cases {
        let err = refused(literal);
        assert_corrupt(&err, api_key);
        assert!(
            matches!(err.error, WireError::TrailingBytes { trailing, .. } if trailing == trailing_bytes),
            "{literal}: {}",
            err.error
        );
    }
}

// ---- topic names ----

#[test]
fn an_empty_topic_name_is_corrupt() {
    let err =
        refused("00000018 | 0001 0001 0000002a | 0000 | 00000000 | 01 | 00000001 | 00000001 61");
    assert_corrupt(&err, ApiKey::Produce);
    assert_eq!(
        err.error,
        WireError::InvalidTopicName(TopicNameError::Empty)
    );
    let err = refused("00000010 | 0003 0001 0000002a | 00000001 | 0000 | 0000");
    assert_corrupt(&err, ApiKey::Metadata);
    assert_eq!(
        err.error,
        WireError::InvalidTopicName(TopicNameError::Empty)
    );
}

#[test]
fn a_topic_name_with_a_forbidden_character_is_corrupt() {
    // "a/b" in a FETCH v1.
    let err = refused(
        "0000001d | 0002 0001 0000002a | 0003 612f62 | 00000000 | 0000000000000000 | 00001000",
    );
    assert_corrupt(&err, ApiKey::Fetch);
    assert_eq!(
        err.error,
        WireError::InvalidTopicName(TopicNameError::InvalidChar {
            ch: '/',
            position: 1
        })
    );
    // "тема": valid UTF-8, but not letters the protocol allows.
    let err = refused("00000016 | 0003 0001 0000002a | 00000001 | 0008 d182d0b5d0bcd0b0");
    assert_corrupt(&err, ApiKey::Metadata);
    assert_eq!(
        err.error,
        WireError::InvalidTopicName(TopicNameError::InvalidChar {
            ch: 'т',
            position: 0
        })
    );
}

#[test]
fn a_topic_name_that_is_not_utf8_is_corrupt() {
    let err = refused("0000000f | 0003 0001 0000002a | 00000001 | 0001 ff");
    assert_corrupt(&err, ApiKey::Metadata);
    assert_eq!(err.error, WireError::TopicNameNotUtf8);
}

#[test]
fn a_topic_name_of_250_characters_is_corrupt_and_249_is_accepted() {
    // METADATA with one name of `n` times 'a': body = 4 + 2 + n, frame = 8 + body.
    let metadata_naming = |n: usize| {
        format!(
            "{:08x} | 0003 0001 0000002a | 00000001 | {n:04x} {}",
            8 + 4 + 2 + n,
            "61".repeat(n)
        )
    };
    let err = refused(&metadata_naming(250));
    assert_corrupt(&err, ApiKey::Metadata);
    assert_eq!(
        err.error,
        WireError::InvalidTopicName(TopicNameError::TooLong { len: 250 })
    );
    let body = accepted(&metadata_naming(249));
    assert!(matches!(body, RequestBody::Metadata(ref m) if m.topics[0].as_str().len() == 249));
}

#[test]
fn a_topic_name_length_overrunning_the_frame_is_corrupt() {
    let err = refused("00000010 | 0003 0001 0000002a | 00000001 | 0005 6162");
    assert_runs_past_the_end(&err, ApiKey::Metadata);
}

// ---- METADATA counts ----

#[test]
fn a_huge_topic_count_is_corrupt() {
    // 2^31 - 1 names promised, none present.
    let err = refused("0000000c | 0003 0001 0000002a | 7fffffff");
    assert_runs_past_the_end(&err, ApiKey::Metadata);
    // More names than the bytes left could hold (3 names need at least 9 bytes; 6 are there).
    let err = refused("00000012 | 0003 0001 0000002a | 00000003 | 0001 61 | 0001 62");
    assert_runs_past_the_end(&err, ApiKey::Metadata);
}

#[test]
fn a_negative_topic_count_is_corrupt() {
    let err = refused("0000000c | 0003 0001 0000002a | ffffffff");
    assert_invalid_field(&err, ApiKey::Metadata, "topicCount", -1);
}

// ---- the session goes on ----

#[test]
fn a_refused_frame_is_skipped_and_the_next_frame_decodes() {
    let mut stream = whole_frame(
        "00000018 | 0001 0001 0000002a | 0001 74 | 00000000 | 01 | 00000001 | 00000000",
    );
    let next = whole_frame("0000000c | 0003 0001 0000002b | 00000000");
    stream.extend_from_slice(&next);
    let Ok(Decoded::Complete {
        value: Err(_),
        used,
    }) = decode_request_frame(&stream)
    else {
        panic!("the first frame is refused");
    };
    match decode_request_frame(&stream[used..]) {
        Ok(Decoded::Complete {
            value: Ok(request),
            used,
        }) => {
            assert_eq!(used, next.len());
            assert_eq!(request.correlation_id, 43);
            assert!(matches!(request.body, RequestBody::Metadata(ref m) if m.topics.is_empty()));
        }
        other => panic!("expected the METADATA after it, got {other:?}"),
    }
}
