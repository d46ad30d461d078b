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
//! | `wire` (private) | big-endian primitives with position-tracking reads |
//!
//! # Conventions
//!
//! * Encoders write into a caller's buffer (`impl BufMut`) and have an exact `encoded_len`.
//! * Decoders take a byte slice and return the value and the number of bytes used.
//! * Only [`frame`] can say "incomplete": once a whole frame is in hand, a short body is an error
//!   ([`WireError::UnexpectedEnd`]), because the length prefix promised those bytes.
//! * A length read from the wire is checked against the bytes actually present (and against
//!   [`MAX_FRAME_BYTES`]) before anything is allocated for it.

pub mod error;
pub mod frame;
pub mod partitioner;
pub mod record;
pub mod request;
pub mod response;
pub mod topic;
mod wire;

pub use error::{ErrorCode, WireError};
pub use frame::{
    Decoded, FrameStatus, LEN_PREFIX_BYTES, MAX_FRAME_BYTES, REQUEST_HEADER_BYTES,
    RESPONSE_HEADER_BYTES, RequestHeader, ResponseHeader, check_frame,
};
pub use partitioner::{fnv1a32, partition_for_key};
pub use record::{
    MAX_RECORD_PAYLOAD_BYTES, RECORD_HEADER_BYTES, RecordScanner, RecordSet, RecordSetBuilder,
    ScanEnd, ScannedRecord, crc32c, encode_record, record_bytes,
};
pub use request::{
    AckPolicy, ApiKey, FetchRequest, LongPoll, MAX_FETCH_WAIT_MS, MetadataRequest, ProduceRequest,
    Request, RequestBody, RequestError, decode_request_frame,
};
pub use response::{
    FETCH_RESPONSE_HEADER_BYTES, FetchResponse, MAX_FETCH_PAYLOAD_BYTES, MetadataResponse,
    PartitionMetadata, ProduceResponse, ResponseFrame, TopicMetadata, decode_response_frame,
    encode_error_response, encode_fetch_response_header, encode_response,
};
pub use topic::{MAX_TOPIC_NAME_CHARS, TopicName, TopicNameError};

/// A message body with a fixed binary layout: encodes into a caller's buffer, decodes from a
/// slice returning the value and the bytes it used.
pub trait WireMessage: Sized {
    /// Exact number of bytes [`WireMessage::encode`] writes.
    fn encoded_len(&self) -> usize;
    /// Appends the encoded message to `buf`.
    fn encode<B: bytes::BufMut>(&self, buf: &mut B);
    /// Decodes one message from the start of `buf`, returning it and the bytes used.
    fn decode(buf: &[u8]) -> Result<(Self, usize), WireError>;
}
