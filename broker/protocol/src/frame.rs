//! Framing: the length prefix and the request/response headers.
//!
//! ```text
//! request frame                          response frame
//! +---------------------+                +---------------------+
//! | int32 len           |  bytes after   | int32 len           |
//! +---------------------+  this field    +---------------------+
//! | int16 apiKey        | \              | int32 correlationId | \
//! | int16 apiVersion    |  | header      | int16 errorCode     | / header (6 bytes)
//! | int32 correlationId | /  (8 bytes)   +---------------------+
//! +---------------------+                | body (none on error)|
//! | body                |                +---------------------+
//! +---------------------+
//! ```
//!
//! All integers are big-endian. `len` must be in `1..=MAX_FRAME_BYTES`; anything else means the
//! stream cannot be re-synchronised and the connection is closed without an answer.

use bytes::BufMut;

use crate::error::{ErrorCode, WireError};

/// Largest frame, counted after the length prefix: 8 MiB.
pub const MAX_FRAME_BYTES: usize = 8 * 1024 * 1024;
/// The `int32 len` prefix.
pub const LEN_PREFIX_BYTES: usize = 4;
/// `int16 apiKey, int16 apiVersion, int32 correlationId`.
pub const REQUEST_HEADER_BYTES: usize = 8;
/// `int32 correlationId, int16 errorCode`.
pub const RESPONSE_HEADER_BYTES: usize = 6;

/// The result of decoding from a stream that may not hold a whole frame yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded<T> {
    /// At least `need` more bytes are required; nothing is wrong yet.
    Incomplete {
        /// Lower bound on the missing bytes.
        need: usize,
    },
    /// A value, and the bytes of the buffer it used (including the length prefix).
    Complete {
        /// The decoded value.
        value: T,
        /// Bytes consumed from the start of the buffer.
        used: usize,
    },
}

/// What [`check_frame`] found at the start of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameStatus {
    /// At least `need` more bytes are required.
    Incomplete {
        /// Lower bound on the missing bytes.
        need: usize,
    },
    /// A whole frame of `body_len` bytes follows the prefix; it spans
    /// `LEN_PREFIX_BYTES + body_len` bytes of the buffer.
    Complete {
        /// The frame length from the prefix.
        body_len: usize,
    },
}

/// Looks at the length prefix at the start of `buf`. Checks the length against
/// [`MAX_FRAME_BYTES`] as soon as the prefix is readable, so a reader can refuse a hostile length
/// before it allocates or waits for the body.
pub fn check_frame(buf: &[u8]) -> Result<FrameStatus, WireError> {
    let Some(prefix) = buf.first_chunk::<LEN_PREFIX_BYTES>() else {
        return Ok(FrameStatus::Incomplete {
            need: LEN_PREFIX_BYTES - buf.len(),
        });
    };
    let len = i32::from_be_bytes(*prefix);
    if len <= 0 || len as usize > MAX_FRAME_BYTES {
        return Err(WireError::FrameLengthOutOfRange { len });
    }
    let body_len = len as usize;
    let have = buf.len() - LEN_PREFIX_BYTES;
    if have < body_len {
        Ok(FrameStatus::Incomplete {
            need: body_len - have,
        })
    } else {
        Ok(FrameStatus::Complete { body_len })
    }
}

/// The fixed part of every request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHeader {
    /// Which request (see [`crate::ApiKey`]).
    pub api_key: i16,
    /// Version of that request.
    pub api_version: i16,
    /// Chosen by the client, echoed in the response.
    pub correlation_id: i32,
}

impl RequestHeader {
    /// Appends the header.
    pub fn encode<B: BufMut>(&self, buf: &mut B) {
        buf.put_i16(self.api_key);
        buf.put_i16(self.api_version);
        buf.put_i32(self.correlation_id);
    }

    /// Reads the header from the start of a frame body (after the length prefix).
    pub fn decode(body: &[u8]) -> Result<(Self, usize), WireError> {
        let Some(h) = body.first_chunk::<REQUEST_HEADER_BYTES>() else {
            return Err(WireError::ShortFrame {
                len: body.len(),
                need: REQUEST_HEADER_BYTES,
            });
        };
        Ok((
            Self {
                api_key: i16::from_be_bytes([h[0], h[1]]),
                api_version: i16::from_be_bytes([h[2], h[3]]),
                correlation_id: i32::from_be_bytes([h[4], h[5], h[6], h[7]]),
            },
            REQUEST_HEADER_BYTES,
        ))
    }
}

/// The fixed part of every response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseHeader {
    /// The correlationId of the request this answers.
    pub correlation_id: i32,
    /// [`ErrorCode::None`] on success; any other code means the body is empty.
    pub error_code: ErrorCode,
}

impl ResponseHeader {
    /// Appends the header.
    pub fn encode<B: BufMut>(&self, buf: &mut B) {
        buf.put_i32(self.correlation_id);
        buf.put_i16(self.error_code.as_i16());
    }

    /// Reads the header from the start of a frame body (after the length prefix).
    pub fn decode(body: &[u8]) -> Result<(Self, usize), WireError> {
        let Some(h) = body.first_chunk::<RESPONSE_HEADER_BYTES>() else {
            return Err(WireError::ShortFrame {
                len: body.len(),
                need: RESPONSE_HEADER_BYTES,
            });
        };
        Ok((
            Self {
                correlation_id: i32::from_be_bytes([h[0], h[1], h[2], h[3]]),
                error_code: ErrorCode::from_i16(i16::from_be_bytes([h[4], h[5]])),
            },
            RESPONSE_HEADER_BYTES,
        ))
    }
}

/// Splits a whole frame off the front of `buf`: `Ok(Complete { value: body, used })` where
/// `body` is the frame without its length prefix.
pub(crate) fn split_frame(buf: &[u8]) -> Result<Decoded<&[u8]>, WireError> {
    match check_frame(buf)? {
        FrameStatus::Incomplete { need } => Ok(Decoded::Incomplete { need }),
        FrameStatus::Complete { body_len } => Ok(Decoded::Complete {
            value: &buf[LEN_PREFIX_BYTES..LEN_PREFIX_BYTES + body_len],
            used: LEN_PREFIX_BYTES + body_len,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_shorter_than_four_bytes_is_incomplete() {
        assert_eq!(check_frame(&[]), Ok(FrameStatus::Incomplete { need: 4 }));
        assert_eq!(
            check_frame(&[0, 0]),
            Ok(FrameStatus::Incomplete { need: 2 })
        );
    }

    #[test]
    fn lengths_zero_negative_and_over_the_limit_close_the_connection() {
        for len in [0i32, -1, i32::MIN, (MAX_FRAME_BYTES + 1) as i32] {
            let err = check_frame(&len.to_be_bytes()).unwrap_err();
            assert_eq!(err, WireError::FrameLengthOutOfRange { len });
            assert!(err.closes_connection());
        }
    }

    #[test]
    fn the_maximum_length_is_accepted_before_the_body_arrives() {
        let prefix = (MAX_FRAME_BYTES as i32).to_be_bytes();
        assert_eq!(
            check_frame(&prefix),
            Ok(FrameStatus::Incomplete {
                need: MAX_FRAME_BYTES
            })
        );
    }

    #[test]
    fn response_header_reads_unknown_codes_as_corrupt_request() {
        let (h, used) = ResponseHeader::decode(&[0, 0, 0, 7, 0, 99]).unwrap();
        assert_eq!(used, 6);
        assert_eq!(h.correlation_id, 7);
        assert_eq!(h.error_code, ErrorCode::CorruptRequest);
    }
}
