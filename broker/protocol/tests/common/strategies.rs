//! proptest strategies for every protocol value, valid by construction.
//!
//! Each strategy generates only values the protocol allows (a topic name within the rules, a
//! record set with no empty record, a FETCH whose minBytes ≤ maxBytes, …), because the property
//! under test is that *valid* values survive the wire unchanged. Invalid input has its own
//! tests: hand-written frames for each rule, and arbitrary bytes for "never panics".

use booblik_protocol::{
    AckPolicy, FetchRequest, FetchResponse, LongPoll, MAX_TOPIC_NAME_CHARS, MetadataRequest,
    MetadataResponse, PartitionMetadata, ProduceRequest, ProduceResponse, RecordSet, Request,
    RequestBody, TopicMetadata, TopicName,
};
use bytes::Bytes;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::string::string_regex;

/// Longest payload generated; small keeps the cases fast, the layout does not depend on size.
pub const MAX_PAYLOAD_BYTES: usize = 64;
/// Most records in one generated set.
pub const MAX_RECORDS: usize = 8;
/// Most topics in one generated METADATA request or response.
pub const MAX_TOPICS: usize = 4;
/// Most partitions of one generated topic.
pub const MAX_PARTITIONS: usize = 4;

/// A valid topic name: mostly short, sometimes at the 249-character limit.
pub fn topic_name() -> impl Strategy<Value = TopicName> {
    let regex = |pattern: &str| string_regex(pattern).expect("a valid regex");
    let short = regex("[A-Za-z0-9._-]{1,16}");
    let longest = regex(&format!("[A-Za-z0-9._-]{{{MAX_TOPIC_NAME_CHARS}}}"));
    prop_oneof![4 => short, 1 => longest]
        .prop_map(|name| TopicName::new(name).expect("the regex only produces valid names"))
}

/// A non-empty payload.
pub fn payload() -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 1..=MAX_PAYLOAD_BYTES)
}

/// A list of payloads for a record set (at least one).
pub fn payloads() -> impl Strategy<Value = Vec<Vec<u8>>> {
    vec(payload(), 1..=MAX_RECORDS)
}

/// A valid record set.
pub fn record_set() -> impl Strategy<Value = RecordSet> {
    payloads().prop_map(|p| RecordSet::from_payloads(p).expect("non-empty payloads"))
}

/// Any of the three ack policies.
pub fn ack_policy() -> impl Strategy<Value = AckPolicy> {
    prop_oneof![
        Just(AckPolicy::None),
        Just(AckPolicy::Written),
        Just(AckPolicy::Forced)
    ]
}

/// A valid PRODUCE v1 body.
pub fn produce_request() -> impl Strategy<Value = ProduceRequest> {
    (topic_name(), any::<i32>(), ack_policy(), record_set()).prop_map(
        |(topic, partition, ack, records)| ProduceRequest {
            topic,
            partition,
            ack,
            records,
        },
    )
}

/// A valid FETCH v1 (`long_poll: None`) or v2 body: fetchOffset ≥ 0, maxBytes ≥ 1, maxWait ≥ 0,
/// 0 ≤ minBytes ≤ maxBytes.
pub fn fetch_request() -> impl Strategy<Value = FetchRequest> {
    (topic_name(), any::<i32>(), 0..=i64::MAX, 1..=i32::MAX)
        .prop_flat_map(|(topic, partition, fetch_offset, max_bytes)| {
            let long_poll = proptest::option::of((0..=i32::MAX, 0..=max_bytes).prop_map(
                |(max_wait_ms, min_bytes)| LongPoll {
                    max_wait_ms,
                    min_bytes,
                },
            ));
            (
                Just(topic),
                Just(partition),
                Just(fetch_offset),
                Just(max_bytes),
                long_poll,
            )
        })
        .prop_map(
            |(topic, partition, fetch_offset, max_bytes, long_poll)| FetchRequest {
                topic,
                partition,
                fetch_offset,
                max_bytes,
                long_poll,
            },
        )
}

/// A METADATA v1 body (possibly empty: all topics).
pub fn metadata_request() -> impl Strategy<Value = MetadataRequest> {
    vec(topic_name(), 0..=MAX_TOPICS).prop_map(|topics| MetadataRequest { topics })
}

/// A whole request of any kind.
pub fn request() -> impl Strategy<Value = Request> {
    let body = prop_oneof![
        produce_request().prop_map(RequestBody::Produce),
        fetch_request().prop_map(RequestBody::Fetch),
        metadata_request().prop_map(RequestBody::Metadata),
    ];
    (any::<i32>(), body).prop_map(|(correlation_id, body)| Request {
        correlation_id,
        body,
    })
}

/// A PRODUCE response.
pub fn produce_response() -> impl Strategy<Value = ProduceResponse> {
    (any::<i64>(), any::<i64>()).prop_map(|(base_offset, log_end_offset)| ProduceResponse {
        base_offset,
        log_end_offset,
    })
}

/// A FETCH response; the payload is opaque bytes (possibly empty, possibly mid-record).
pub fn fetch_response() -> impl Strategy<Value = FetchResponse> {
    (any::<i64>(), vec(any::<u8>(), 0..=4 * MAX_PAYLOAD_BYTES)).prop_map(
        |(high_watermark, payload)| FetchResponse {
            high_watermark,
            payload: Bytes::from(payload),
        },
    )
}

/// A METADATA response.
pub fn metadata_response() -> impl Strategy<Value = MetadataResponse> {
    let partition = (any::<i32>(), any::<i64>(), any::<i64>()).prop_map(
        |(id, log_start_offset, high_watermark)| PartitionMetadata {
            id,
            log_start_offset,
            high_watermark,
        },
    );
    let topic = (topic_name(), vec(partition, 0..=MAX_PARTITIONS))
        .prop_map(|(name, partitions)| TopicMetadata { name, partitions });
    vec(topic, 0..=MAX_TOPICS).prop_map(|topics| MetadataResponse { topics })
}
