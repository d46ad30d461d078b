//! Response bodies and whole-response framing.
//!
//! ```text
//! every response: int32 len · int32 correlationId · int16 errorCode · body
//!                 (an error response has no body: len = 6)
//!
//! PRODUCE v1           FETCH v1/v2                  METADATA v1
//! int64 baseOffset     int64 highWatermark          int32 topicCount
//! int64 logEndOffset   int32 payloadBytes           { u16 len, bytes name,
//!                      bytes payload                  int32 partitionCount,
//!                        (raw segment bytes,          { int32 id,
//!                         may end mid-record)           int64 logStartOffset,
//!                                                       int64 highWatermark } × partitionCount
//!                                                   } × topicCount
//! ```
//!
//! A broker serving FETCH with `sendfile(2)` writes [`encode_fetch_response_header`] and then the
//! payload straight from the segment file; [`FetchResponse`] is the same bytes as one value.

use bytes::{BufMut, Bytes, BytesMut};

use crate::WireMessage;
use crate::error::{ErrorCode, WireError};
use crate::frame::{
    Decoded, LEN_PREFIX_BYTES, MAX_FRAME_BYTES, RESPONSE_HEADER_BYTES, ResponseHeader, frame_slice,
    split_frame,
};
use crate::topic::TopicName;
use crate::wire::{Reader, put_topic, topic_len};

/// Successful PRODUCE: the first offset given to the batch and the log end after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProduceResponse {
    /// Offset of the first record of the batch.
    pub base_offset: i64,
    /// Offset the next record will get.
    pub log_end_offset: i64,
}

impl WireMessage for ProduceResponse {
    fn encoded_len(&self) -> usize {
        16
    }

    fn encode<B: BufMut>(&self, buf: &mut B) {
        buf.put_i64(self.base_offset);
        buf.put_i64(self.log_end_offset);
    }

    fn decode(buf: &[u8]) -> Result<(Self, usize), WireError> {
        let mut r = Reader::new(buf, "PRODUCE response");
        let base_offset = r.i64()?;
        let log_end_offset = r.i64()?;
        let used = r.finish()?;
        Ok((
            Self {
                base_offset,
                log_end_offset,
            },
            used,
        ))
    }
}

/// Bytes of a FETCH response before its payload: length prefix, response header,
/// `int64 highWatermark`, `int32 payloadBytes`.
pub const FETCH_RESPONSE_HEADER_BYTES: usize = LEN_PREFIX_BYTES + RESPONSE_HEADER_BYTES + 8 + 4;

/// Largest FETCH payload that fits one frame: [`MAX_FRAME_BYTES`] minus the response header and
/// the `highWatermark` and `payloadBytes` fields. A broker cuts every payload to this, whatever
/// `maxBytes` asks, so a response never breaks the frame limit it is read under.
pub const MAX_FETCH_PAYLOAD_BYTES: usize = MAX_FRAME_BYTES - RESPONSE_HEADER_BYTES - 8 - 4;

/// Successful FETCH.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchResponse {
    /// The partition's high watermark when the response was built.
    pub high_watermark: i64,
    /// Raw segment bytes starting at the fetch offset; may end mid-record.
    pub payload: Bytes,
}

impl WireMessage for FetchResponse {
    fn encoded_len(&self) -> usize {
        8 + 4 + self.payload.len()
    }

    fn encode<B: BufMut>(&self, buf: &mut B) {
        buf.put_i64(self.high_watermark);
        buf.put_i32(self.payload.len() as i32);
        buf.put_slice(&self.payload);
    }

    /// Copies `buf` once, then decodes as [`WireMessage::decode_bytes`].
    fn decode(buf: &[u8]) -> Result<(Self, usize), WireError> {
        Self::decode_bytes(&Bytes::copy_from_slice(buf))
    }

    /// The payload is a slice of `buf`.
    fn decode_bytes(buf: &Bytes) -> Result<(Self, usize), WireError> {
        let mut r = Reader::new(buf, "FETCH response");
        let high_watermark = r.i64()?;
        let len = r.i32()?;
        if len < 0 {
            return Err(WireError::InvalidField {
                field: "payloadBytes",
                value: i64::from(len),
                reason: "must not be negative",
            });
        }
        let start = r.position();
        r.take(len as usize)?;
        let payload = buf.slice(start..r.position());
        let used = r.finish()?;
        Ok((
            Self {
                high_watermark,
                payload,
            },
            used,
        ))
    }
}

/// One partition in a METADATA response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionMetadata {
    /// Partition id.
    pub id: i32,
    /// First offset still in the log.
    pub log_start_offset: i64,
    /// Offset the next record will get.
    pub high_watermark: i64,
}

/// One topic in a METADATA response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMetadata {
    /// Topic name.
    pub name: TopicName,
    /// Partitions, sorted by id.
    pub partitions: Vec<PartitionMetadata>,
}

/// Successful METADATA: topics sorted by name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetadataResponse {
    /// The topics asked for (or all of them).
    pub topics: Vec<TopicMetadata>,
}

const PARTITION_METADATA_BYTES: usize = 4 + 8 + 8;

impl WireMessage for MetadataResponse {
    fn encoded_len(&self) -> usize {
        4 + self
            .topics
            .iter()
            .map(|t| topic_len(&t.name) + 4 + t.partitions.len() * PARTITION_METADATA_BYTES)
            .sum::<usize>()
    }

    fn encode<B: BufMut>(&self, buf: &mut B) {
        buf.put_i32(self.topics.len() as i32);
        for t in &self.topics {
            put_topic(buf, &t.name);
            buf.put_i32(t.partitions.len() as i32);
            for p in &t.partitions {
                buf.put_i32(p.id);
                buf.put_i64(p.log_start_offset);
                buf.put_i64(p.high_watermark);
            }
        }
    }

    fn decode(buf: &[u8]) -> Result<(Self, usize), WireError> {
        let mut r = Reader::new(buf, "METADATA response");
        // A topic takes at least u16 len + 1 character + int32 partitionCount.
        let count = r.count("topicCount", 2 + 1 + 4)?;
        let mut topics = Vec::with_capacity(count);
        for _ in 0..count {
            let name = r.topic()?;
            let n = r.count("partitionCount", PARTITION_METADATA_BYTES)?;
            let mut partitions = Vec::with_capacity(n);
            for _ in 0..n {
                partitions.push(PartitionMetadata {
                    id: r.i32()?,
                    log_start_offset: r.i64()?,
                    high_watermark: r.i64()?,
                });
            }
            topics.push(TopicMetadata { name, partitions });
        }
        let used = r.finish()?;
        Ok((Self { topics }, used))
    }
}

/// Appends a whole successful response frame.
pub fn encode_response<M: WireMessage, B: BufMut>(correlation_id: i32, body: &M, buf: &mut B) {
    buf.put_i32((RESPONSE_HEADER_BYTES + body.encoded_len()) as i32);
    ResponseHeader {
        correlation_id,
        error_code: ErrorCode::None,
    }
    .encode(buf);
    body.encode(buf);
}

/// Appends a whole error response frame (no body).
pub fn encode_error_response<B: BufMut>(correlation_id: i32, error_code: ErrorCode, buf: &mut B) {
    buf.put_i32(RESPONSE_HEADER_BYTES as i32);
    ResponseHeader {
        correlation_id,
        error_code,
    }
    .encode(buf);
}

/// Appends everything of a successful FETCH response up to its payload
/// ([`FETCH_RESPONSE_HEADER_BYTES`] bytes). The caller then sends exactly `payload_len` bytes.
pub fn encode_fetch_response_header<B: BufMut>(
    correlation_id: i32,
    high_watermark: i64,
    payload_len: u32,
    buf: &mut B,
) {
    buf.put_i32((RESPONSE_HEADER_BYTES + 8 + 4 + payload_len as usize) as i32);
    ResponseHeader {
        correlation_id,
        error_code: ErrorCode::None,
    }
    .encode(buf);
    buf.put_i64(high_watermark);
    buf.put_i32(payload_len as i32);
}

/// A whole response frame: its header and undecoded body. The body's layout depends on the
/// request it answers, which only the caller knows. `B` is `Bytes` from
/// [`split_response_frame`] (decode the body with [`WireMessage::decode_bytes`], copying
/// nothing) and a borrowed slice from [`decode_response_frame`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseFrame<B = Bytes> {
    /// correlationId and errorCode.
    pub header: ResponseHeader,
    /// The bytes after the header; empty for an error response.
    pub body: B,
}

/// Splits one response frame off the front of a stream buffer, copying nothing: the body is a
/// `Bytes` sharing `buf`'s allocation. `max_frame_bytes` is the reader's limit on `len`
/// ([`MAX_FRAME_BYTES`] by the protocol; a client may accept more, see [`crate::check_frame`]).
/// `Incomplete` leaves `buf` as it was; `Complete { used }` removed `used` bytes from it. `Err`
/// is a length out of range or a frame shorter than the response header: the connection is
/// lost.
pub fn split_response_frame(
    buf: &mut BytesMut,
    max_frame_bytes: usize,
) -> Result<Decoded<ResponseFrame>, WireError> {
    match split_frame(buf, max_frame_bytes)? {
        Decoded::Incomplete { need } => Ok(Decoded::Incomplete { need }),
        Decoded::Complete { value: frame, used } => {
            let (header, header_len) = ResponseHeader::decode(&frame)?;
            Ok(Decoded::Complete {
                value: ResponseFrame {
                    header,
                    body: frame.slice(header_len..),
                },
                used,
            })
        }
    }
}

/// Decodes one response frame from the start of a borrowed buffer under [`MAX_FRAME_BYTES`],
/// leaving the buffer alone (the caller skips `used` bytes); the body borrows from `buf`.
pub fn decode_response_frame(buf: &[u8]) -> Result<Decoded<ResponseFrame<&[u8]>>, WireError> {
    match frame_slice(buf, MAX_FRAME_BYTES)? {
        Decoded::Incomplete { need } => Ok(Decoded::Incomplete { need }),
        Decoded::Complete { value: frame, used } => {
            let (header, header_len) = ResponseHeader::decode(frame)?;
            Ok(Decoded::Complete {
                value: ResponseFrame {
                    header,
                    body: &frame[header_len..],
                },
                used,
            })
        }
    }
}
