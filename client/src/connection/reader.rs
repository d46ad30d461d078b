//! The reader task: splits the socket into response frames and hands each to its caller.
//!
//! # The frame limit
//!
//! Frames are split with `booblik_protocol::split_response_frame`, the codec the broker's tests
//! and tools use too, under [`MAX_RESPONSE_FRAME_BYTES`] rather than the protocol's
//! `MAX_FRAME_BYTES` (8 MiB, the limit a *broker* applies to requests). A FETCH answer is a
//! header plus up to `maxBytes` of payload, so a broker that answers a FETCH of a full 8 MiB
//! payload sends a frame 18 bytes over that limit; this reader accepts it, so it stays
//! interoperable with such a broker. (Our requests never ask for more than
//! `MAX_FETCH_PAYLOAD_BYTES`, so a conforming broker's answers always fit the protocol's limit.)
//!
//! # Zero copy
//!
//! A complete frame is split off the read buffer as one `Bytes`; the body handed to the caller
//! is a slice of it, a FETCH payload is a slice of that (`FetchResponse::decode_bytes`), and so
//! are the records a consumer later cuts out of it. The payload is copied once, by the kernel,
//! from the socket into this buffer.

use std::sync::Arc;

use booblik_protocol::{
    Decoded, ErrorCode, FETCH_RESPONSE_HEADER_BYTES, LEN_PREFIX_BYTES, MAX_FRAME_BYTES,
    RESPONSE_HEADER_BYTES, WireError, split_response_frame,
};
use bytes::BytesMut;
use tokio::io::AsyncReadExt;
use tokio::net::tcp::OwnedReadHalf;

use crate::connection::pending::Matched;
use crate::connection::response::RawResponse;
use crate::connection::shared::Shared;
use crate::error::ClientError;

/// Largest response frame accepted, counted after the length prefix: a FETCH answer carrying
/// `MAX_FRAME_BYTES` of payload.
pub const MAX_RESPONSE_FRAME_BYTES: usize =
    MAX_FRAME_BYTES + FETCH_RESPONSE_HEADER_BYTES - LEN_PREFIX_BYTES;

/// Runs until the connection closes.
pub(crate) async fn run(shared: Arc<Shared>, read: OwnedReadHalf, read_buffer_bytes: usize) {
    let mut closed = shared.closed_signal();
    let failure = tokio::select! {
        biased;
        _ = closed.wait_for(|closed| *closed) => return,
        failure = read_loop(&shared, read, read_buffer_bytes) => failure,
    };
    shared.fail(failure);
}

/// Reads and dispatches answers until something fails; returns the failure.
async fn read_loop(
    shared: &Shared,
    mut read: OwnedReadHalf,
    read_buffer_bytes: usize,
) -> ClientError {
    let mut buf = BytesMut::with_capacity(read_buffer_bytes);
    loop {
        loop {
            match split_frame(&mut buf) {
                Ok(Some(response)) => {
                    if let Err(e) = dispatch(shared, response) {
                        return e;
                    }
                }
                Ok(None) => break,
                Err(e) => return e,
            }
        }
        if buf.capacity() == buf.len() {
            buf.reserve(read_buffer_bytes);
        }
        match read.read_buf(&mut buf).await {
            Ok(0) if buf.is_empty() => {
                return ClientError::closed(format!(
                    "the broker at {} closed the connection",
                    shared.peer
                ));
            }
            Ok(0) => {
                return ClientError::closed(format!(
                    "the broker at {} closed the connection in the middle of a response \
                     ({} bytes of it received)",
                    shared.peer,
                    buf.len()
                ));
            }
            Ok(_) => {}
            Err(e) => {
                return ClientError::closed(format!(
                    "reading from the broker at {} failed: {e}",
                    shared.peer
                ));
            }
        }
    }
}

/// Splits one whole frame off the front of `buf`, or says more bytes are needed (reserving room
/// for the whole frame once its length is known, so a large answer is read into one
/// allocation).
pub(crate) fn split_frame(buf: &mut BytesMut) -> Result<Option<RawResponse>, ClientError> {
    match split_response_frame(buf, MAX_RESPONSE_FRAME_BYTES) {
        Ok(Decoded::Complete { value, .. }) => Ok(Some(value)),
        Ok(Decoded::Incomplete { need }) => {
            buf.reserve(need);
            Ok(None)
        }
        // Framing is lost either way: the length is impossible, or too short for a header.
        Err(WireError::FrameLengthOutOfRange { len, max }) => {
            Err(ClientError::ResponseFrameLength {
                len,
                min: RESPONSE_HEADER_BYTES,
                max,
            })
        }
        Err(WireError::ShortFrame { len, need }) => Err(ClientError::ResponseFrameLength {
            len: len as i32,
            min: need,
            max: MAX_RESPONSE_FRAME_BYTES,
        }),
        Err(other) => Err(other.into()),
    }
}

fn dispatch(shared: &Shared, response: RawResponse) -> Result<(), ClientError> {
    let received = response.header.correlation_id;
    match shared.match_response(received) {
        Matched::Answer(reply) => {
            if booblik_protocol::probe::ENABLED {
                *shared
                    .last_dispatch
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) =
                    booblik_protocol::probe::Stamp::now();
            }
            // The caller may have given up (timeout, dropped future); nothing to do then.
            let _ = reply.send(Ok(Some(response)));
            Ok(())
        }
        Matched::UnansweredRequest { correlation_id } => {
            let code = response.header.error_code;
            if code == ErrorCode::None {
                tracing::debug!(correlation_id, "broker acknowledged an ack=none request");
            } else {
                shared.record_none_refusal();
                tracing::warn!(
                    correlation_id,
                    code = code.name(),
                    peer = %shared.peer,
                    "broker refused an ack=none PRODUCE; its caller was already told \"written\""
                );
            }
            Ok(())
        }
        Matched::Mismatch { expected } => {
            tracing::error!(expected, received, peer = %shared.peer, "response out of order");
            Err(ClientError::CorrelationMismatch { expected, received })
        }
        Matched::Unsolicited => Err(ClientError::UnsolicitedResponse { received }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;

    #[test]
    fn a_frame_shorter_than_the_header_fails_the_connection() {
        let mut buf = BytesMut::new();
        buf.put_i32(5);
        buf.put_bytes(0, 5);
        assert!(matches!(
            split_frame(&mut buf),
            Err(ClientError::ResponseFrameLength { len: 5, min: 6, .. })
        ));
    }

    #[test]
    fn a_fetch_answer_larger_than_max_frame_bytes_is_accepted() {
        let len = MAX_RESPONSE_FRAME_BYTES;
        let mut buf = BytesMut::new();
        buf.put_i32(len as i32);
        buf.put_i32(7);
        buf.put_i16(0);
        buf.put_bytes(0, len - RESPONSE_HEADER_BYTES);
        let response = split_frame(&mut buf).unwrap().unwrap();
        assert_eq!(response.header.correlation_id, 7);
        assert_eq!(response.body.len(), len - RESPONSE_HEADER_BYTES);
        assert!(buf.is_empty());
    }

    #[test]
    fn lengths_outside_the_limit_fail_the_connection() {
        for len in [0, -1, MAX_RESPONSE_FRAME_BYTES as i32 + 1] {
            let mut buf = BytesMut::new();
            buf.put_i32(len);
            assert!(matches!(
                split_frame(&mut buf),
                Err(ClientError::ResponseFrameLength { .. })
            ));
        }
    }

    #[test]
    fn a_partial_frame_waits_for_more_bytes() {
        let mut buf = BytesMut::new();
        buf.put_i32(6);
        buf.put_i32(1);
        assert!(split_frame(&mut buf).unwrap().is_none());
        buf.put_i16(3);
        let response = split_frame(&mut buf).unwrap().unwrap();
        assert_eq!(response.header.error_code, ErrorCode::RecordTooLarge);
        assert!(response.body.is_empty());
    }
}
