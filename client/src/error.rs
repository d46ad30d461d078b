//! [`ClientError`]: everything a call into this crate can fail with.
//!
//! The variants fall into four groups, and the group tells the caller what to do:
//!
//! * **the broker said no** ([`ClientError::Broker`]): the request reached the broker and was
//!   refused with a protocol [`ErrorCode`]. The connection is fine; retrying the same request
//!   gets the same answer.
//! * **refused before sending** ([`ClientError::EmptyRecord`], [`ClientError::RecordTooLarge`],
//!   [`ClientError::RequestTooLarge`], [`ClientError::UnknownPartition`], [`ClientError::InvalidTopicName`],
//!   [`ClientError::InvalidConfig`]): the request would break a protocol rule, so it never left
//!   the process.
//! * **the connection is gone** ([`ClientError::ConnectionClosed`], [`ClientError::Timeout`],
//!   the protocol violations): every request pending on that connection failed with it; a new
//!   connection is needed. Whether a failed PRODUCE was applied is unknown.
//! * **the data is wrong** ([`ClientError::CrcMismatch`], [`ClientError::CorruptPayload`],
//!   [`ClientError::RecordExceedsMaxBytes`]): a consumer cannot advance past this position
//!   without a decision from its caller.
//!
//! The type is `Clone` (I/O errors are kept behind an `Arc`) because one failure often has
//! many recipients: every record of a refused batch, every request pending on a broken
//! connection.

use std::io;
use std::sync::Arc;

use booblik_protocol::{ErrorCode, TopicName, TopicNameError, WireError};

/// The error of every fallible call in this crate.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The broker answered with an error code.
    #[error("broker refused {request}: {code}")]
    Broker {
        /// The protocol's error code.
        code: ErrorCode,
        /// What was asked, e.g. `PRODUCE events/2`.
        request: String,
    },

    /// A response body that does not decode as the answer to its request.
    #[error("protocol violation: {0}")]
    Protocol(#[from] WireError),

    /// A response carried a correlationId other than the oldest pending request's. The broker
    /// must answer in request order, so this is a broken broker (or a broken stream), never a
    /// reordering to paper over: the connection is closed and every pending request gets this
    /// error.
    #[error(
        "response correlationId {received} does not match the oldest pending request \
         {expected}: responses must arrive in request order; the connection is closed"
    )]
    CorrelationMismatch {
        /// correlationId of the oldest pending request.
        expected: i32,
        /// correlationId the broker sent.
        received: i32,
    },

    /// A response arrived while no request was waiting for one.
    #[error(
        "response correlationId {received} arrived while no request was pending; \
         the connection is closed"
    )]
    UnsolicitedResponse {
        /// correlationId the broker sent.
        received: i32,
    },

    /// A response frame's length prefix is outside what any answer can be.
    #[error("response frame length {len} is out of range {min}..={max}; the connection is closed")]
    ResponseFrameLength {
        /// The length as read.
        len: i32,
        /// Smallest possible frame (a response header).
        min: usize,
        /// Largest frame this client accepts.
        max: usize,
    },

    /// The TCP connection could not be established.
    #[error("could not connect to {addr}: {source}")]
    Connect {
        /// The address as given.
        addr: String,
        /// What the operating system said.
        #[source]
        source: Arc<io::Error>,
    },

    /// The TCP connection was not established within the connect timeout.
    #[error("could not connect to {addr} within {timeout_ms} ms")]
    ConnectTimeout {
        /// The address as given.
        addr: String,
        /// `ConnectionConfig::connect_timeout_ms`.
        timeout_ms: u64,
    },

    /// The connection is closed (or broke while the request was pending).
    #[error("connection closed: {reason}")]
    ConnectionClosed {
        /// Why it closed, first cause only.
        reason: Arc<str>,
    },

    /// No answer within the request timeout. Answers arrive in request order, so every later
    /// answer on the connection would queue behind the missing one: the connection is closed.
    #[error("{api} request {correlation_id} got no answer within {timeout_ms} ms")]
    Timeout {
        /// `produce`, `fetch` or `metadata`.
        api: &'static str,
        /// The request's correlationId (0 when it never got one).
        correlation_id: i32,
        /// The limit that passed.
        timeout_ms: u64,
    },

    /// Records are never empty: a zero length marks unwritten space in a segment. Refused
    /// before sending; a broker would answer `CORRUPT_REQUEST`.
    #[error("empty record refused before sending: booblik records are never empty")]
    EmptyRecord,

    /// A record larger than [`MAX_RECORD_PAYLOAD_BYTES`](booblik_protocol::MAX_RECORD_PAYLOAD_BYTES):
    /// with its header it would not fit one FETCH payload, so no consumer could ever read it.
    /// Refused before sending; a broker would answer `RECORD_TOO_LARGE`.
    #[error(
        "record of {size} bytes refused before sending: larger than {max} bytes, the largest \
         record a FETCH can return"
    )]
    RecordTooLarge {
        /// The record's payload length.
        size: usize,
        /// `MAX_RECORD_PAYLOAD_BYTES`.
        max: usize,
    },

    /// The request would not fit in one frame (`MAX_FRAME_BYTES`).
    #[error("request of {size} bytes exceeds the frame limit of {max} bytes")]
    RequestTooLarge {
        /// Frame bytes after the length prefix.
        size: usize,
        /// `MAX_FRAME_BYTES`.
        max: usize,
    },

    /// A FETCH response holds the start of a record and no whole record: the record is larger
    /// than the request's `maxBytes`, and asking again would get the same bytes forever.
    /// `size` is the record's payload length from its header; `maxBytes` must be at least
    /// `size + 8` to read it.
    #[error("record of {size} bytes exceeds maxBytes {max_bytes}")]
    RecordExceedsMaxBytes {
        /// Payload length of the record that does not fit.
        size: usize,
        /// The `maxBytes` of the request.
        max_bytes: i32,
        /// The record's offset.
        offset: i64,
    },

    /// A fetched record's payload does not match its stored CRC-32C.
    #[error(
        "CRC mismatch in {topic}/{partition} at offset {offset}: stored {stored:#010x}, \
         computed {computed:#010x}"
    )]
    CrcMismatch {
        /// Topic of the record.
        topic: TopicName,
        /// Partition of the record.
        partition: i32,
        /// Offset of the record.
        offset: i64,
        /// CRC in the record header.
        stored: u32,
        /// CRC of the payload as received.
        computed: u32,
    },

    /// Fetched bytes that are not a record at all (a negative or zero length where a record
    /// must start, or a broker that stops short).
    #[error("fetched bytes of {topic}/{partition} at offset {offset} are not a record: {detail}")]
    CorruptPayload {
        /// Topic fetched.
        topic: TopicName,
        /// Partition fetched.
        partition: i32,
        /// Offset where a record should start.
        offset: i64,
        /// What was found.
        detail: String,
    },

    /// A partition the topic does not have (checked against METADATA before sending).
    #[error("topic {topic} has no partition {partition} (it has {partition_count})")]
    UnknownPartition {
        /// The topic.
        topic: TopicName,
        /// The partition asked for.
        partition: i32,
        /// How many the topic has.
        partition_count: usize,
    },

    /// A string that is not a valid topic name.
    #[error(transparent)]
    InvalidTopicName(#[from] TopicNameError),

    /// A configuration value outside its allowed range.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),

    /// The producer was closed before the record was sent.
    #[error("the producer is closed")]
    ProducerClosed,
}

impl ClientError {
    /// The broker's error code when the broker refused the request.
    pub fn broker_code(&self) -> Option<ErrorCode> {
        match self {
            ClientError::Broker { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// True when the connection that produced this error can no longer be used.
    pub fn is_connection_lost(&self) -> bool {
        matches!(
            self,
            ClientError::ConnectionClosed { .. }
                | ClientError::Timeout { .. }
                | ClientError::CorrelationMismatch { .. }
                | ClientError::UnsolicitedResponse { .. }
                | ClientError::ResponseFrameLength { .. }
        )
    }

    pub(crate) fn closed(reason: impl Into<Arc<str>>) -> Self {
        ClientError::ConnectionClosed {
            reason: reason.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_too_large_record_message_names_both_numbers() {
        let err = ClientError::RecordExceedsMaxBytes {
            size: 500,
            max_bytes: 100,
            offset: 7,
        };
        assert_eq!(err.to_string(), "record of 500 bytes exceeds maxBytes 100");
    }

    #[test]
    fn a_crc_mismatch_names_the_offset() {
        let err = ClientError::CrcMismatch {
            topic: TopicName::new("events").unwrap(),
            partition: 2,
            offset: 41,
            stored: 1,
            computed: 2,
        };
        assert!(err.to_string().contains("events/2 at offset 41"), "{err}");
    }

    #[test]
    fn broker_refusals_expose_their_code() {
        let err = ClientError::Broker {
            code: ErrorCode::OffsetOutOfRange,
            request: "FETCH t/0 at offset 9".into(),
        };
        assert_eq!(err.broker_code(), Some(ErrorCode::OffsetOutOfRange));
        assert!(err.to_string().ends_with("OFFSET_OUT_OF_RANGE"), "{err}");
        assert!(!err.is_connection_lost());
    }
}
