//! Error codes on the wire and structured decoding errors.
//!
//! [`ErrorCode`] is the protocol's vocabulary: the numbers are fixed forever and never reused.
//! [`WireError`] is this crate's account of *what* was wrong with some bytes; every variant maps
//! to the code a broker answers with ([`WireError::error_code`]). Domain errors (a topic that does
//! not exist, an offset out of range) are not wire errors: they belong to the broker and the
//! client.

use crate::topic::TopicNameError;

/// `int16 errorCode` of a response. The numbers are part of the protocol and never change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i16)]
pub enum ErrorCode {
    /// Success.
    None = 0,
    /// The topic or the partition does not exist on this broker.
    UnknownTopicOrPartition = 1,
    /// `fetchOffset` is outside `[logStartOffset, highWatermark]`.
    OffsetOutOfRange = 2,
    /// A record cannot fit in an empty segment.
    RecordTooLarge = 3,
    /// Unknown apiKey or apiVersion.
    UnsupportedVersion = 4,
    /// The request was malformed.
    CorruptRequest = 5,
}

impl ErrorCode {
    /// Every code, in numeric order.
    pub const ALL: [ErrorCode; 6] = [
        ErrorCode::None,
        ErrorCode::UnknownTopicOrPartition,
        ErrorCode::OffsetOutOfRange,
        ErrorCode::RecordTooLarge,
        ErrorCode::UnsupportedVersion,
        ErrorCode::CorruptRequest,
    ];

    /// Decodes a code. An unknown number is read as [`ErrorCode::CorruptRequest`], as the
    /// protocol requires of every client.
    pub fn from_i16(code: i16) -> Self {
        match code {
            0 => Self::None,
            1 => Self::UnknownTopicOrPartition,
            2 => Self::OffsetOutOfRange,
            3 => Self::RecordTooLarge,
            4 => Self::UnsupportedVersion,
            _ => Self::CorruptRequest,
        }
    }

    /// The number on the wire.
    pub fn as_i16(self) -> i16 {
        self as i16
    }

    /// The protocol's name for the code, e.g. `OFFSET_OUT_OF_RANGE`.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "NONE",
            Self::UnknownTopicOrPartition => "UNKNOWN_TOPIC_OR_PARTITION",
            Self::OffsetOutOfRange => "OFFSET_OUT_OF_RANGE",
            Self::RecordTooLarge => "RECORD_TOO_LARGE",
            Self::UnsupportedVersion => "UNSUPPORTED_VERSION",
            Self::CorruptRequest => "CORRUPT_REQUEST",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What was wrong with a sequence of bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The length prefix is ≤ 0 or above the reader's limit (for requests
    /// [`MAX_FRAME_BYTES`](crate::MAX_FRAME_BYTES)). Framing is lost: the connection must be
    /// closed without an answer.
    #[error("frame length {len} is out of range 1..={max}")]
    FrameLengthOutOfRange {
        /// The length as read.
        len: i32,
        /// The limit it was checked against.
        max: usize,
    },
    /// A whole frame is shorter than the header it must start with.
    #[error("frame of {len} bytes is shorter than the {need}-byte header")]
    ShortFrame {
        /// Bytes after the length prefix.
        len: usize,
        /// Header size.
        need: usize,
    },
    /// A field runs past the end of the frame.
    #[error("{what} ends early at byte {offset}: need {need} more bytes, have {have}")]
    UnexpectedEnd {
        /// What was being decoded.
        what: &'static str,
        /// Position in the body where the field starts.
        offset: usize,
        /// Bytes the field needs.
        need: usize,
        /// Bytes left.
        have: usize,
    },
    /// Bytes are left over after the message the frame should contain.
    #[error("{what} has {trailing} unexpected trailing bytes at byte {offset}")]
    TrailingBytes {
        /// What was being decoded.
        what: &'static str,
        /// Where the message ended.
        offset: usize,
        /// How many bytes follow it.
        trailing: usize,
    },
    /// apiKey/apiVersion pair this protocol does not define.
    #[error("unsupported api key {api_key} version {api_version}")]
    UnsupportedVersion {
        /// apiKey as received.
        api_key: i16,
        /// apiVersion as received.
        api_version: i16,
    },
    /// A field holds a value the protocol forbids.
    #[error("{field} = {value} is invalid: {reason}")]
    InvalidField {
        /// Protocol name of the field.
        field: &'static str,
        /// Value as received.
        value: i64,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// A topic name is not UTF-8.
    #[error("topic name is not valid UTF-8")]
    TopicNameNotUtf8,
    /// A topic name breaks the naming rules.
    #[error("invalid topic name: {0}")]
    InvalidTopicName(#[from] TopicNameError),
}

impl WireError {
    /// The code a broker answers this error with.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            Self::UnsupportedVersion { .. } => ErrorCode::UnsupportedVersion,
            _ => ErrorCode::CorruptRequest,
        }
    }

    /// True when framing is lost and the connection must be closed instead of answered.
    pub fn closes_connection(&self) -> bool {
        matches!(self, Self::FrameLengthOutOfRange { .. })
    }
}
