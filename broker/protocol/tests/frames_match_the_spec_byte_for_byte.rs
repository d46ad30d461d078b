//! One frame of every kind, written out byte for byte from the layout in SPEC §2.
//!
//! Each test decodes the literal into the expected value *and* encodes the value back into the
//! literal. Round-trip tests alone cannot catch an encoder and a decoder that agree with each
//! other but not with the other booblik clients (a field in the wrong order, a little-endian
//! integer, a missing length); these literals can, because nobody generated them with this crate.

#[path = "common/hex_frames.rs"]
mod hex_frames;

use booblik_protocol::{
    AckPolicy, Decoded, ErrorCode, FETCH_RESPONSE_HEADER_BYTES, FetchRequest, FetchResponse,
    LongPoll, MetadataRequest, MetadataResponse, PartitionMetadata, ProduceRequest,
    ProduceResponse, RecordSet, Request, RequestBody, ResponseHeader, TopicMetadata, TopicName,
    WireMessage, decode_request_frame, decode_response_frame, encode_error_response,
    encode_fetch_response_header, encode_response,
};
use bytes::Bytes;
use hex_frames::whole_frame;

fn topic(name: &str) -> TopicName {
    TopicName::new(name).expect("a valid topic name")
}

/// Checks that `literal` decodes into `request` and that `request` encodes into `literal`.
fn assert_request_bytes(literal: &str, request: &Request) {
    let frame = whole_frame(literal);
    assert_eq!(
        decode_request_frame(&frame),
        Ok(Decoded::Complete {
            value: Ok(request.clone()),
            used: frame.len()
        })
    );
    let mut encoded = Vec::new();
    request.encode(&mut encoded);
    assert_eq!(hex::encode(&encoded), hex::encode(&frame));
    assert_eq!(request.encoded_len(), frame.len());
}

/// Checks that `literal` is the successful response `body` to `correlation_id`, both ways.
fn assert_response_bytes<M>(literal: &str, correlation_id: i32, body: &M)
where
    M: WireMessage + Clone + PartialEq + std::fmt::Debug,
{
    let frame = whole_frame(literal);
    let Ok(Decoded::Complete { value, used }) = decode_response_frame(&frame) else {
        panic!("a whole response frame");
    };
    assert_eq!(used, frame.len());
    assert_eq!(
        value.header,
        ResponseHeader {
            correlation_id,
            error_code: ErrorCode::None
        }
    );
    assert_eq!(M::decode(value.body), Ok((body.clone(), value.body.len())));
    let mut encoded = Vec::new();
    encode_response(correlation_id, body, &mut encoded);
    assert_eq!(hex::encode(&encoded), hex::encode(&frame));
}

// ---- requests ----

#[test]
fn a_produce_request_has_the_spec_layout() {
    let request = Request {
        correlation_id: 7,
        body: RequestBody::Produce(ProduceRequest {
            topic: topic("orders"),
            partition: 3,
            ack: AckPolicy::Forced,
            records: RecordSet::from_payloads([&b"hi"[..], b"abc"]).unwrap(),
        }),
    };
    assert_request_bytes(
        "00000026                 \
         | 0001 | 0001 | 00000007 \
         | 0006 6f7264657273      \
         | 00000003               \
         | 02                     \
         | 00000002               \
         | 00000002 6869          \
         | 00000003 616263",
        &request,
    );
}

#[test]
fn a_fetch_v1_request_has_the_spec_layout() {
    let request = Request {
        correlation_id: 8,
        body: RequestBody::Fetch(FetchRequest {
            topic: topic("orders"),
            partition: 1,
            fetch_offset: 0x0102,
            max_bytes: 1024 * 1024,
            long_poll: None,
        }),
    };
    assert_request_bytes(
        "00000020                 \
         | 0002 | 0001 | 00000008 \
         | 0006 6f7264657273      \
         | 00000001               \
         | 0000000000000102       \
         | 00100000",
        &request,
    );
}

#[test]
fn a_fetch_v2_request_has_the_spec_layout() {
    let request = Request {
        correlation_id: 9,
        body: RequestBody::Fetch(FetchRequest {
            topic: topic("orders"),
            partition: 1,
            fetch_offset: 0x0102,
            max_bytes: 1024 * 1024,
            long_poll: Some(LongPoll {
                max_wait_ms: 500,
                min_bytes: 1,
            }),
        }),
    };
    assert_request_bytes(
        "00000028                 \
         | 0002 | 0002 | 00000009 \
         | 0006 6f7264657273      \
         | 00000001               \
         | 0000000000000102       \
         | 00100000               \
         | 000001f4               \
         | 00000001",
        &request,
    );
}

#[test]
fn a_metadata_request_has_the_spec_layout() {
    let request = Request {
        correlation_id: 10,
        body: RequestBody::Metadata(MetadataRequest {
            topics: vec![topic("a"), topic("orders")],
        }),
    };
    assert_request_bytes(
        "00000017                 \
         | 0003 | 0001 | 0000000a \
         | 00000002               \
         | 0001 61                \
         | 0006 6f7264657273",
        &request,
    );
    // topicCount 0 asks for every topic.
    let all = Request {
        correlation_id: 10,
        body: RequestBody::Metadata(MetadataRequest::default()),
    };
    assert_request_bytes("0000000c | 0003 | 0001 | 0000000a | 00000000", &all);
}

// ---- responses ----

#[test]
fn a_produce_response_has_the_spec_layout() {
    assert_response_bytes(
        "00000016               \
         | 00000007 | 0000      \
         | 0000000000000064     \
         | 0000000000000066",
        7,
        &ProduceResponse {
            base_offset: 100,
            log_end_offset: 102,
        },
    );
}

#[test]
fn a_fetch_response_has_the_spec_layout() {
    // The payload is raw segment bytes: here one record {length 1, crc32c("a"), "a"} followed by
    // the first 3 bytes of the next record's length (a payload may end mid-record).
    let response = FetchResponse {
        high_watermark: 3,
        payload: Bytes::from_static(&[
            0x00, 0x00, 0x00, 0x01, 0xc1, 0xd0, 0x43, 0x30, 0x61, 0x00, 0x00, 0x00,
        ]),
    };
    let literal = "0000001e                 \
                   | 00000009 | 0000        \
                   | 0000000000000003       \
                   | 0000000c               \
                   | 00000001 c1d04330 61   \
                   | 000000";
    assert_response_bytes(literal, 9, &response);

    // The zero-copy path writes the same bytes in two parts: a header, then the payload.
    let mut head = Vec::new();
    encode_fetch_response_header(9, 3, 12, &mut head);
    assert_eq!(head.len(), FETCH_RESPONSE_HEADER_BYTES);
    head.extend_from_slice(&response.payload);
    assert_eq!(hex::encode(head), hex::encode(whole_frame(literal)));
}

#[test]
fn a_caught_up_fetch_response_has_an_empty_payload() {
    assert_response_bytes(
        "00000012 | 00000009 | 0000 | 0000000000000003 | 00000000",
        9,
        &FetchResponse {
            high_watermark: 3,
            payload: Bytes::new(),
        },
    );
}

#[test]
fn a_metadata_response_has_the_spec_layout() {
    assert_response_bytes(
        "0000003e                                               \
         | 0000000b | 0000                                      \
         | 00000001                                             \
         | 0006 6f7264657273 | 00000002                         \
         | 00000000 | 0000000000000000 | 0000000000000005       \
         | 00000001 | 0000000000000002 | 0000000000000007",
        11,
        &MetadataResponse {
            topics: vec![TopicMetadata {
                name: topic("orders"),
                partitions: vec![
                    PartitionMetadata {
                        id: 0,
                        log_start_offset: 0,
                        high_watermark: 5,
                    },
                    PartitionMetadata {
                        id: 1,
                        log_start_offset: 2,
                        high_watermark: 7,
                    },
                ],
            }],
        },
    );
}

#[test]
fn an_error_response_is_a_header_without_a_body_for_every_code() {
    // The numbers are fixed forever: NONE 0 … CORRUPT_REQUEST 5.
    let codes = [
        (ErrorCode::UnknownTopicOrPartition, "0001"),
        (ErrorCode::OffsetOutOfRange, "0002"),
        (ErrorCode::RecordTooLarge, "0003"),
        (ErrorCode::UnsupportedVersion, "0004"),
        (ErrorCode::CorruptRequest, "0005"),
    ];
    for (code, code_hex) in codes {
        let frame = whole_frame(&format!("00000006 | 0000000d | {code_hex}"));
        let mut encoded = Vec::new();
        encode_error_response(13, code, &mut encoded);
        assert_eq!(hex::encode(&encoded), hex::encode(&frame), "{code}");
        let Ok(Decoded::Complete { value, used }) = decode_response_frame(&frame) else {
            panic!("a whole response frame");
        };
        assert_eq!(used, frame.len());
        assert_eq!(value.header.correlation_id, 13);
        assert_eq!(value.header.error_code, code);
        assert!(value.body.is_empty());
    }
}

#[test]
fn error_codes_have_their_fixed_numbers_and_names() {
    let table = [
        (0, "NONE"),
        (1, "UNKNOWN_TOPIC_OR_PARTITION"),
        (2, "OFFSET_OUT_OF_RANGE"),
        (3, "RECORD_TOO_LARGE"),
        (4, "UNSUPPORTED_VERSION"),
        (5, "CORRUPT_REQUEST"),
    ];
    assert_eq!(ErrorCode::ALL.len(), table.len());
    for (code, (number, name)) in ErrorCode::ALL.into_iter().zip(table) {
        assert_eq!((code.as_i16(), code.name()), (number, name));
        assert_eq!(ErrorCode::from_i16(number), code);
    }
}

#[test]
fn an_unknown_error_code_reads_as_corrupt_request() {
    for unknown in [6_i16, 99, -1, i16::MAX, i16::MIN] {
        assert_eq!(ErrorCode::from_i16(unknown), ErrorCode::CorruptRequest);
    }
    let frame = whole_frame("00000006 | 0000000d | 0063");
    let Ok(Decoded::Complete { value, .. }) = decode_response_frame(&frame) else {
        panic!("a whole response frame");
    };
    assert_eq!(value.header.error_code, ErrorCode::CorruptRequest);
}
