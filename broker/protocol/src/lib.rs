//! The booblik wire protocol and record format, as a pure codec.
//!
//! This crate does no I/O and knows no async runtime: it turns bytes into values and values into
//! bytes. The broker (`booblik-broker`) and the client (`booblik-client`) both build on it, so the
//! two sides of a connection can never disagree about a frame. `docs/protocol.md` is the
//! normative description in prose; this crate is its executable form.
//!
//! # Layout
//!
//! | module | what it holds |
//! |---|---|
//! | [`frame`] | the length prefix, [`MAX_FRAME_BYTES`], request/response headers, "incomplete" vs error |
//! | [`request`] | PRODUCE v1, FETCH v1/v2, METADATA v1 request bodies and [`decode_request_frame`] |
//! | [`response`] | the matching response bodies and [`decode_response_frame`] |
//! | [`error`] | [`ErrorCode`] (numbers fixed forever) and [`WireError`] (what was wrong with the bytes) |
//! | [`record`] | the record format on disk and in FETCH payloads, and the [`RecordScanner`] |
//! | [`topic`] | [`TopicName`] validation |
//! | [`partitioner`] | FNV-1a 32-bit key partitioner shared by every booblik client |
//! | [`probe`] | the hop probe: timestamps along a request's path, compiled out without the `hop-probe` feature |
//! | `wire` (private) | big-endian primitives with position-tracking reads |
//!
//! # Conventions
//!
//! * Encoders write into a caller's buffer (`impl BufMut`) and have an exact `encoded_len`. A
//!   PRODUCE can also be encoded *vectored* ([`Request::encode_vectored`]): everything up to its
//!   records into the buffer, and the records as a `Bytes` to write after it, uncopied.
//! * Decoders take the frame as `bytes::Bytes` ([`WireMessage::decode_bytes`],
//!   [`split_request_frame`], [`split_response_frame`]) and return values whose byte fields —
//!   PRODUCE's [`RecordSet`], FETCH's payload — are slices of it: decoding copies no record
//!   bytes ([`frame`] explains the path). Slice-taking variants exist for callers that hold a
//!   borrowed slice; they copy.
//! * Only [`frame`] can say "incomplete": once a whole frame is in hand, a short body is an error
//!   ([`WireError::UnexpectedEnd`]), because the length prefix promised those bytes.
//! * A length read from the wire is checked against the bytes actually present (and against
//!   [`MAX_FRAME_BYTES`]) before anything is allocated for it.

pub mod error;
pub mod frame;
pub mod partitioner;
pub mod probe;
pub mod record;
pub mod request;
pub mod response;
pub mod topic;
mod wire;

pub use error::{ErrorCode, WireError};
pub use frame::{
    Decoded, FrameStatus, LEN_PREFIX_BYTES, MAX_FRAME_BYTES, REQUEST_HEADER_BYTES,
    RESPONSE_HEADER_BYTES, RequestHeader, ResponseHeader, check_frame, split_frame,
};
pub use partitioner::{fnv1a32, partition_for_key};
pub use record::{
    MAX_RECORD_PAYLOAD_BYTES, RECORD_HEADER_BYTES, RecordScanner, RecordSet, RecordSetBuilder,
    ScanEnd, ScannedRecord, crc32c, encode_record, record_bytes,
};
pub use request::{
    AckPolicy, ApiKey, FetchRequest, LongPoll, MAX_FETCH_WAIT_MS, MetadataRequest, ProduceRequest,
    Request, RequestBody, RequestError, decode_request, decode_request_frame, split_request_frame,
};
pub use response::{
    FETCH_RESPONSE_HEADER_BYTES, FetchResponse, MAX_FETCH_PAYLOAD_BYTES, MetadataResponse,
    PartitionMetadata, ProduceResponse, ResponseFrame, TopicMetadata, decode_response_frame,
    encode_error_response, encode_fetch_response_header, encode_response, split_response_frame,
};
pub use topic::{MAX_TOPIC_NAME_CHARS, TopicName, TopicNameError};

/// A message body with a fixed binary layout: encodes into a caller's buffer, decodes returning
/// the value and the bytes it used.
///
/// Each message implements one of the two decoders and gets the other: messages without byte
/// fields decode from a slice, and [`WireMessage::decode_bytes`] just borrows; messages holding
/// record bytes ([`ProduceRequest`], [`FetchResponse`]) decode from `Bytes` by slicing, and
/// [`WireMessage::decode`] copies its slice into a `Bytes` first.
pub trait WireMessage: Sized {
    /// Exact number of bytes [`WireMessage::encode`] writes.
    fn encoded_len(&self) -> usize;
    /// Appends the encoded message to `buf`.
    fn encode<B: bytes::BufMut>(&self, buf: &mut B);
    /// Decodes one message from the start of a borrowed slice, returning it and the bytes used.
    /// Record bytes in the result are a copy.
    fn decode(buf: &[u8]) -> Result<(Self, usize), WireError>;
    /// Decodes one message from the start of `buf`, returning it and the bytes used. Record
    /// bytes in the result are slices of `buf`, sharing its allocation.
    fn decode_bytes(buf: &bytes::Bytes) -> Result<(Self, usize), WireError> {
        Self::decode(buf)
    }
}
