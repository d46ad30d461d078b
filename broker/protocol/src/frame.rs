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
//!
//! # Decoding without copies
//!
//! A reader keeps received bytes in a `BytesMut`. [`split_frame`] checks the length prefix and,
//! once the whole frame is in, splits it off the front of that buffer as one `Bytes`: a new
//! handle on the same allocation, not a copy. Every decoder of this crate then slices that
//! `Bytes` (the records of a PRODUCE, the payload of a FETCH), so the bytes a peer sent are
//! never copied between the socket read and their destination (the broker's segment, the
//! consumer's `Record`). The slice-taking functions ([`check_frame`] and the `decode_*_frame`
//! functions of [`crate::request`] and [`crate::response`]) are for callers that hold a borrowed
//! slice (tests, fuzzers, tools); they copy a frame's record bytes once.

use bytes::{BufMut, Bytes, BytesMut};

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
/// `max_frame_bytes` as soon as the prefix is readable, so a reader can refuse a hostile length
/// before it allocates or waits for the body.
///
/// A broker reads requests under [`MAX_FRAME_BYTES`]. A client may read answers under a larger
/// limit, to stay interoperable with a broker that answers a FETCH of a full 8 MiB payload a few
/// bytes over the frame limit (`booblik-client` does).
pub fn check_frame(buf: &[u8], max_frame_bytes: usize) -> Result<FrameStatus, WireError> {
    let Some(prefix) = buf.first_chunk::<LEN_PREFIX_BYTES>() else {
        return Ok(FrameStatus::Incomplete {
            need: LEN_PREFIX_BYTES - buf.len(),
        });
    };
    let len = i32::from_be_bytes(*prefix);
    if len <= 0 || len as usize > max_frame_bytes {
        return Err(WireError::FrameLengthOutOfRange {
            len,
            max: max_frame_bytes,
        });
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

/// The whole frame at the front of `buf`, borrowed: `Ok(Complete { value: body, used })` where
/// `body` is the frame without its length prefix.
pub(crate) fn frame_slice(buf: &[u8], max_frame_bytes: usize) -> Result<Decoded<&[u8]>, WireError> {
    match check_frame(buf, max_frame_bytes)? {
        FrameStatus::Incomplete { need } => Ok(Decoded::Incomplete { need }),
        FrameStatus::Complete { body_len } => Ok(Decoded::Complete {
            value: &buf[LEN_PREFIX_BYTES..LEN_PREFIX_BYTES + body_len],
            used: LEN_PREFIX_BYTES + body_len,
        }),
    }
}

/// Splits the whole frame at the front of `buf` off it, without copying:
/// `Ok(Complete { value: body, used })` where `body` is the frame after its length prefix (a
/// `Bytes` sharing `buf`'s allocation) and `used` the bytes removed from `buf`, prefix included.
/// `Incomplete { need }` leaves `buf` as it was; a reader may `reserve(need)` so that a large
/// frame is read into one allocation. `Err` is a length outside `1..=max_frame_bytes`: close the
/// connection.
pub fn split_frame(
    buf: &mut BytesMut,
    max_frame_bytes: usize,
) -> Result<Decoded<Bytes>, WireError> {
    match check_frame(buf, max_frame_bytes)? {
        FrameStatus::Incomplete { need } => Ok(Decoded::Incomplete { need }),
        FrameStatus::Complete { body_len } => {
            let used = LEN_PREFIX_BYTES + body_len;
            let mut frame = buf.split_to(used).freeze();
            let body = frame.split_off(LEN_PREFIX_BYTES);
            Ok(Decoded::Complete { value: body, used })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_shorter_than_four_bytes_is_incomplete() {
        assert_eq!(
            check_frame(&[], MAX_FRAME_BYTES),
            Ok(FrameStatus::Incomplete { need: 4 })
        );
        assert_eq!(
            check_frame(&[0, 0], MAX_FRAME_BYTES),
            Ok(FrameStatus::Incomplete { need: 2 })
        );
    }

    #[test]
    fn lengths_zero_negative_and_over_the_limit_close_the_connection() {
        for len in [0i32, -1, i32::MIN, (MAX_FRAME_BYTES + 1) as i32] {
            let err = check_frame(&len.to_be_bytes(), MAX_FRAME_BYTES).unwrap_err();
            assert_eq!(
                err,
                WireError::FrameLengthOutOfRange {
                    len,
                    max: MAX_FRAME_BYTES
                }
            );
            assert!(err.closes_connection());
        }
    }

    #[test]
    fn the_maximum_length_is_accepted_before_the_body_arrives() {
        let prefix = (MAX_FRAME_BYTES as i32).to_be_bytes();
        assert_eq!(
            check_frame(&prefix, MAX_FRAME_BYTES),
            Ok(FrameStatus::Incomplete {
                need: MAX_FRAME_BYTES
            })
        );
    }

    #[test]
    fn the_limit_is_the_callers() {
        let prefix = ((MAX_FRAME_BYTES + 18) as i32).to_be_bytes();
        assert!(check_frame(&prefix, MAX_FRAME_BYTES).is_err());
        assert_eq!(
            check_frame(&prefix, MAX_FRAME_BYTES + 18),
            Ok(FrameStatus::Incomplete {
                need: MAX_FRAME_BYTES + 18
            })
        );
    }

    #[test]
    fn a_split_frame_shares_the_buffers_allocation() {
        let mut buf = BytesMut::new();
        buf.put_i32(3);
        buf.put_slice(b"abc");
        buf.put_i32(1);
        let start = buf.as_ptr() as usize;
        let Decoded::Complete { value, used } = split_frame(&mut buf, MAX_FRAME_BYTES).unwrap()
        else {
            panic!("a whole frame")
        };
        assert_eq!((&value[..], used), (&b"abc"[..], 7));
        assert_eq!(
            value.as_ptr() as usize,
            start + LEN_PREFIX_BYTES,
            "the frame was copied"
        );
        assert_eq!(buf.len(), 4, "the next frame's prefix stays");
        assert_eq!(
            split_frame(&mut buf, MAX_FRAME_BYTES).unwrap(),
            Decoded::Incomplete { need: 1 }
        );
        assert_eq!(buf.len(), 4, "an incomplete frame is left in place");
    }

    #[test]
    fn response_header_reads_unknown_codes_as_corrupt_request() {
        let (h, used) = ResponseHeader::decode(&[0, 0, 0, 7, 0, 99]).unwrap();
        assert_eq!(used, 6);
        assert_eq!(h.correlation_id, 7);
        assert_eq!(h.error_code, ErrorCode::CorruptRequest);
    }
}
