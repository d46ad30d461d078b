//! Request bodies and whole-request decoding.
//!
//! ```text
//! PRODUCE v1 (apiKey 1)             FETCH v1/v2 (apiKey 2)        METADATA v1 (apiKey 3)
//! u16   nameLen                     u16   nameLen                 int32 topicCount (0 = all)
//! bytes name                        bytes name                    { u16 len, bytes name }
//! int32 partition                   int32 partition                  × topicCount
//! int8  ackPolicy (0,1,2)           int64 fetchOffset
//! int32 recordCount (≥ 1)           int32 maxBytes
//! { int32 size (≥ 1), bytes }       int32 maxWaitMillis  (v2 only)
//!    × recordCount                  int32 minBytes       (v2 only)
//! ```
//!
//! Validation that is a property of the frame alone (recordCount ≤ 0, empty records, unknown
//! ackPolicy, negative fetchOffset, maxBytes ≤ 0, negative waits, minBytes > maxBytes) happens
//! here, so every broker built on this crate answers CORRUPT_REQUEST identically. Questions that
//! need the broker's state (does the topic exist, is the offset in range) are left to it.

use bytes::{BufMut, Bytes, BytesMut};

use crate::WireMessage;
use crate::error::{ErrorCode, WireError};
use crate::frame::{
    Decoded, LEN_PREFIX_BYTES, MAX_FRAME_BYTES, REQUEST_HEADER_BYTES, RequestHeader, frame_slice,
    split_frame,
};
use crate::record::RecordSet;
use crate::topic::TopicName;
use crate::wire::{Reader, put_topic, topic_len};

/// The requests of the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i16)]
pub enum ApiKey {
    /// Append records.
    Produce = 1,
    /// Read records.
    Fetch = 2,
    /// List topics and partitions.
    Metadata = 3,
}

impl ApiKey {
    /// Lower-case name for logs and metrics.
    pub fn name(self) -> &'static str {
        match self {
            ApiKey::Produce => "produce",
            ApiKey::Fetch => "fetch",
            ApiKey::Metadata => "metadata",
        }
    }
}

/// When the broker answers a PRODUCE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i8)]
pub enum AckPolicy {
    /// No response at all (unless the request is refused while decoding or routing).
    None = 0,
    /// After the bytes are in the log (page cache).
    Written = 1,
    /// After an fsync covering the batch.
    Forced = 2,
}

impl AckPolicy {
    /// Decodes the `int8` on the wire.
    pub fn from_i8(value: i8) -> Option<Self> {
        match value {
            0 => Some(Self::None),
            1 => Some(Self::Written),
            2 => Some(Self::Forced),
            _ => None,
        }
    }

    /// Lower-case name, as used by CLIs and the conformance contract.
    pub fn name(self) -> &'static str {
        match self {
            AckPolicy::None => "none",
            AckPolicy::Written => "written",
            AckPolicy::Forced => "forced",
        }
    }
}

impl std::str::FromStr for AckPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Self::None),
            "written" => Ok(Self::Written),
            "forced" => Ok(Self::Forced),
            other => Err(format!(
                "unknown ack policy {other:?}: use none, written or forced"
            )),
        }
    }
}

/// PRODUCE v1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceRequest {
    /// Target topic.
    pub topic: TopicName,
    /// Target partition.
    pub partition: i32,
    /// When to answer.
    pub ack: AckPolicy,
    /// The records (at least one, none empty).
    pub records: RecordSet,
}

impl WireMessage for ProduceRequest {
    fn encoded_len(&self) -> usize {
        topic_len(&self.topic) + 4 + 1 + self.records.encoded_len()
    }

    fn encode<B: BufMut>(&self, buf: &mut B) {
        put_topic(buf, &self.topic);
        buf.put_i32(self.partition);
        buf.put_i8(self.ack as i8);
        self.records.encode(buf);
    }

    /// Copies `buf` once, then decodes as [`WireMessage::decode_bytes`].
    fn decode(buf: &[u8]) -> Result<(Self, usize), WireError> {
        Self::decode_bytes(&Bytes::copy_from_slice(buf))
    }

    /// The records are a slice of `buf`.
    fn decode_bytes(buf: &Bytes) -> Result<(Self, usize), WireError> {
        let mut r = Reader::new(buf, "PRODUCE request");
        let topic = r.topic()?;
        let partition = r.i32()?;
        let ack_raw = r.i8()?;
        let ack = AckPolicy::from_i8(ack_raw).ok_or(WireError::InvalidField {
            field: "ackPolicy",
            value: i64::from(ack_raw),
            reason: "must be 0 (none), 1 (written) or 2 (forced)",
        })?;
        let records = RecordSet::decode(&mut r, buf)?;
        let used = r.finish()?;
        Ok((
            Self {
                topic,
                partition,
                ack,
                records,
            },
            used,
        ))
    }
}

/// Longest a FETCH v2 long poll waits at a broker: 60 s. A broker clamps `maxWaitMillis` to
/// this, so a client asking for more simply gets an earlier answer, and a client waiting for an
/// answer needs to allow no more than this for the wait.
pub const MAX_FETCH_WAIT_MS: i32 = 60_000;

/// The long-poll fields of FETCH v2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LongPoll {
    /// How long the broker may wait for data (the broker clamps it to [`MAX_FETCH_WAIT_MS`]).
    /// 0 = do not wait.
    pub max_wait_ms: i32,
    /// Bytes past fetchOffset to wait for (0 or 1 = any).
    pub min_bytes: i32,
}

/// FETCH v1 (`long_poll: None`) or v2 (`long_poll: Some`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequest {
    /// Source topic.
    pub topic: TopicName,
    /// Source partition.
    pub partition: i32,
    /// Offset of the first record wanted.
    pub fetch_offset: i64,
    /// Upper bound on the payload.
    pub max_bytes: i32,
    /// v2 only.
    pub long_poll: Option<LongPoll>,
}

impl FetchRequest {
    /// The apiVersion this request encodes as.
    pub fn api_version(&self) -> i16 {
        if self.long_poll.is_some() { 2 } else { 1 }
    }

    fn decode_version(buf: &[u8], version: i16) -> Result<(Self, usize), WireError> {
        let mut r = Reader::new(buf, "FETCH request");
        let topic = r.topic()?;
        let partition = r.i32()?;
        let fetch_offset = r.i64()?;
        let max_bytes = r.i32()?;
        let long_poll = if version >= 2 {
            Some(LongPoll {
                max_wait_ms: r.i32()?,
                min_bytes: r.i32()?,
            })
        } else {
            None
        };
        let used = r.finish()?;
        let req = Self {
            topic,
            partition,
            fetch_offset,
            max_bytes,
            long_poll,
        };
        req.validate()?;
        Ok((req, used))
    }

    /// The rules of SPEC §2 that need no broker state.
    pub fn validate(&self) -> Result<(), WireError> {
        let bad = |field, value: i64, reason| {
            Err(WireError::InvalidField {
                field,
                value,
                reason,
            })
        };
        if self.fetch_offset < 0 {
            return bad("fetchOffset", self.fetch_offset, "must not be negative");
        }
        if self.max_bytes <= 0 {
            return bad("maxBytes", i64::from(self.max_bytes), "must be at least 1");
        }
        if let Some(lp) = self.long_poll {
            if lp.max_wait_ms < 0 {
                return bad(
                    "maxWaitMillis",
                    i64::from(lp.max_wait_ms),
                    "must not be negative",
                );
            }
            if lp.min_bytes < 0 {
                return bad("minBytes", i64::from(lp.min_bytes), "must not be negative");
            }
            if lp.min_bytes > self.max_bytes {
                return bad(
                    "minBytes",
                    i64::from(lp.min_bytes),
                    "must not exceed maxBytes (such a request could never be answered)",
                );
            }
        }
        Ok(())
    }
}

impl WireMessage for FetchRequest {
    fn encoded_len(&self) -> usize {
        topic_len(&self.topic) + 4 + 8 + 4 + if self.long_poll.is_some() { 8 } else { 0 }
    }

    fn encode<B: BufMut>(&self, buf: &mut B) {
        put_topic(buf, &self.topic);
        buf.put_i32(self.partition);
        buf.put_i64(self.fetch_offset);
        buf.put_i32(self.max_bytes);
        if let Some(lp) = self.long_poll {
            buf.put_i32(lp.max_wait_ms);
            buf.put_i32(lp.min_bytes);
        }
    }

    /// Decodes a v1 body; use [`decode_request_frame`] to get the version from the header.
    fn decode(buf: &[u8]) -> Result<(Self, usize), WireError> {
        Self::decode_version(buf, 1)
    }
}

/// METADATA v1.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetadataRequest {
    /// Topics to describe; empty means all.
    pub topics: Vec<TopicName>,
}

impl WireMessage for MetadataRequest {
    fn encoded_len(&self) -> usize {
        4 + self.topics.iter().map(topic_len).sum::<usize>()
    }

    fn encode<B: BufMut>(&self, buf: &mut B) {
        buf.put_i32(self.topics.len() as i32);
        for t in &self.topics {
            put_topic(buf, t);
        }
    }

    fn decode(buf: &[u8]) -> Result<(Self, usize), WireError> {
        let mut r = Reader::new(buf, "METADATA request");
        // Each name takes at least 3 bytes (u16 length + 1 character).
        let count = r.count("topicCount", 3)?;
        let mut topics = Vec::with_capacity(count);
        for _ in 0..count {
            topics.push(r.topic()?);
        }
        let used = r.finish()?;
        Ok((Self { topics }, used))
    }
}

/// A decoded request body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestBody {
    /// PRODUCE v1.
    Produce(ProduceRequest),
    /// FETCH v1 or v2.
    Fetch(FetchRequest),
    /// METADATA v1.
    Metadata(MetadataRequest),
}

/// A whole request: header and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Chosen by the client, echoed in the response.
    pub correlation_id: i32,
    /// The body; its variant and version determine apiKey and apiVersion.
    pub body: RequestBody,
}

impl Request {
    /// The apiKey of this request.
    pub fn api_key(&self) -> ApiKey {
        match self.body {
            RequestBody::Produce(_) => ApiKey::Produce,
            RequestBody::Fetch(_) => ApiKey::Fetch,
            RequestBody::Metadata(_) => ApiKey::Metadata,
        }
    }

    /// The apiVersion this request encodes as.
    pub fn api_version(&self) -> i16 {
        match &self.body {
            RequestBody::Fetch(f) => f.api_version(),
            _ => 1,
        }
    }

    /// The header this request encodes with.
    pub fn header(&self) -> RequestHeader {
        RequestHeader {
            api_key: self.api_key() as i16,
            api_version: self.api_version(),
            correlation_id: self.correlation_id,
        }
    }

    fn body_len(&self) -> usize {
        match &self.body {
            RequestBody::Produce(b) => b.encoded_len(),
            RequestBody::Fetch(b) => b.encoded_len(),
            RequestBody::Metadata(b) => b.encoded_len(),
        }
    }

    /// Bytes of the whole frame, length prefix included.
    pub fn encoded_len(&self) -> usize {
        LEN_PREFIX_BYTES + REQUEST_HEADER_BYTES + self.body_len()
    }

    /// Appends the whole frame (length prefix, header, body). The caller checks
    /// [`Request::encoded_len`] against [`crate::MAX_FRAME_BYTES`] if the body can be large.
    pub fn encode<B: BufMut>(&self, buf: &mut B) {
        buf.put_i32((REQUEST_HEADER_BYTES + self.body_len()) as i32);
        self.header().encode(buf);
        match &self.body {
            RequestBody::Produce(b) => b.encode(buf),
            RequestBody::Fetch(b) => b.encode(buf),
            RequestBody::Metadata(b) => b.encode(buf),
        }
    }

    /// Appends the frame up to a PRODUCE's record bytes and returns those bytes (a handle on the
    /// [`RecordSet`]'s buffer, not a copy), to be written right after what was appended: a
    /// vectored write sends a batch without copying it into a frame. Other requests are
    /// appended whole and return `None`. The two parts together are exactly
    /// [`Request::encode`]'s bytes.
    pub fn encode_vectored<B: BufMut>(&self, buf: &mut B) -> Option<Bytes> {
        let RequestBody::Produce(produce) = &self.body else {
            self.encode(buf);
            return None;
        };
        buf.put_i32((REQUEST_HEADER_BYTES + self.body_len()) as i32);
        self.header().encode(buf);
        put_topic(buf, &produce.topic);
        buf.put_i32(produce.partition);
        buf.put_i8(produce.ack as i8);
        buf.put_i32(produce.records.count() as i32);
        Some(produce.records.wire_bytes().clone())
    }
}

/// A frame that was complete but could not be decoded into a request. The broker answers it with
/// [`RequestError::error_code`] and `correlation_id`, and keeps the connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("request {correlation_id}: {error}")]
pub struct RequestError {
    /// The request's correlationId, or 0 when the frame was shorter than the header.
    pub correlation_id: i32,
    /// The api key from the header, when the header was complete and the key is known.
    pub api_key: Option<ApiKey>,
    /// What was wrong.
    pub error: WireError,
}

impl RequestError {
    /// The code to answer with.
    pub fn error_code(&self) -> ErrorCode {
        self.error.error_code()
    }
}

/// Splits one request frame off the front of a stream buffer and decodes it, copying nothing:
/// a PRODUCE's records are a slice of the frame, which shares `buf`'s allocation.
///
/// * `Err(_)`: the length prefix is out of range; close the connection without answering.
/// * `Ok(Decoded::Incomplete)`: read more bytes (`buf` is left as it was).
/// * `Ok(Decoded::Complete { value: Err(e), used })`: answer `e`; the frame's `used` bytes were
///   removed from `buf`, which now starts at the next frame.
/// * `Ok(Decoded::Complete { value: Ok(request), used })`: serve it (`used` bytes removed).
#[allow(clippy::type_complexity)]
pub fn split_request_frame(
    buf: &mut BytesMut,
) -> Result<Decoded<Result<Request, RequestError>>, WireError> {
    Ok(match split_frame(buf, MAX_FRAME_BYTES)? {
        Decoded::Incomplete { need } => Decoded::Incomplete { need },
        Decoded::Complete { value: body, used } => Decoded::Complete {
            value: decode_request(&body),
            used,
        },
    })
}

/// Decodes one request frame from the start of a borrowed buffer, leaving the buffer alone
/// (the caller skips `used` bytes). The same decoding as [`split_request_frame`], for callers
/// that hold a slice (tests, fuzzers, tools): the frame is copied once. Results as there.
#[allow(clippy::type_complexity)]
pub fn decode_request_frame(
    buf: &[u8],
) -> Result<Decoded<Result<Request, RequestError>>, WireError> {
    Ok(match frame_slice(buf, MAX_FRAME_BYTES)? {
        Decoded::Incomplete { need } => Decoded::Incomplete { need },
        Decoded::Complete { value: body, used } => Decoded::Complete {
            value: decode_request(&Bytes::copy_from_slice(body)),
            used,
        },
    })
}

/// Decodes a whole request frame: `frame` is everything after the length prefix. A PRODUCE's
/// records are a slice of `frame`.
pub fn decode_request(frame: &Bytes) -> Result<Request, RequestError> {
    let (header, used) = RequestHeader::decode(frame).map_err(|error| RequestError {
        correlation_id: 0,
        api_key: None,
        error,
    })?;
    let body = frame.slice(used..);
    let fail = |api_key, error| RequestError {
        correlation_id: header.correlation_id,
        api_key,
        error,
    };
    let unsupported = WireError::UnsupportedVersion {
        api_key: header.api_key,
        api_version: header.api_version,
    };
    let body = match (header.api_key, header.api_version) {
        (1, 1) => RequestBody::Produce(
            ProduceRequest::decode_bytes(&body)
                .map_err(|e| fail(Some(ApiKey::Produce), e))?
                .0,
        ),
        (2, v @ (1 | 2)) => RequestBody::Fetch(
            FetchRequest::decode_version(&body, v)
                .map_err(|e| fail(Some(ApiKey::Fetch), e))?
                .0,
        ),
        (3, 1) => RequestBody::Metadata(
            MetadataRequest::decode(&body)
                .map_err(|e| fail(Some(ApiKey::Metadata), e))?
                .0,
        ),
        (1, _) => return Err(fail(Some(ApiKey::Produce), unsupported)),
        (2, _) => return Err(fail(Some(ApiKey::Fetch), unsupported)),
        (3, _) => return Err(fail(Some(ApiKey::Metadata), unsupported)),
        _ => return Err(fail(None, unsupported)),
    };
    Ok(Request {
        correlation_id: header.correlation_id,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vectored_produce_hands_out_the_record_sets_own_bytes() {
        let records = RecordSet::from_payloads([b"abc".as_slice(), b"de"]).unwrap();
        let request = Request {
            correlation_id: 9,
            body: RequestBody::Produce(ProduceRequest {
                topic: TopicName::new("t").unwrap(),
                partition: 0,
                ack: AckPolicy::Written,
                records: records.clone(),
            }),
        };
        let mut head = Vec::new();
        let tail = request
            .encode_vectored(&mut head)
            .expect("a PRODUCE has a tail");
        assert_eq!(
            tail.as_ptr(),
            records.wire_bytes().as_ptr(),
            "the records were copied"
        );
        assert_eq!(head.len() + tail.len(), request.encoded_len());
    }
}
