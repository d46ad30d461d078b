//! The reader task: splits the socket into response frames and hands each to its caller.
//!
//! # The frame limit
//!
//! `booblik_protocol::decode_response_frame` refuses any frame longer than `MAX_FRAME_BYTES`
//! (8 MiB), the limit the *broker* applies to requests. A FETCH answer, however, is a header
//! plus up to `maxBytes` of payload, so a FETCH with `maxBytes` = 8 MiB is answered with a frame
//! 18 bytes over that limit. This reader therefore does its own length check with
//! [`MAX_RESPONSE_FRAME_BYTES`] = `MAX_FRAME_BYTES` + the FETCH response header, and the
//! connection lowers any `maxBytes` above `MAX_FRAME_BYTES` to it, so every answer to a request
//! this client sends fits. The header itself is decoded with
//! `booblik_protocol::ResponseHeader::decode`, so the two sides still share one codec.
//!
//! # Zero copy
//!
//! A complete frame is split off the read buffer as one `Bytes`; the body handed to the caller
//! is a slice of it, and so are the records a consumer later cuts out of a FETCH payload. The
//! payload is copied once, from the socket into this buffer.

use std::sync::Arc;

use booblik_protocol::{
    ErrorCode, FETCH_RESPONSE_HEADER_BYTES, LEN_PREFIX_BYTES, MAX_FRAME_BYTES,
    RESPONSE_HEADER_BYTES, ResponseHeader,
};
use bytes::{Bytes, BytesMut};
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
/// for the whole frame once its length is known).
pub(crate) fn split_frame(buf: &mut BytesMut) -> Result<Option<RawResponse>, ClientError> {
    let Some(prefix) = buf.first_chunk::<LEN_PREFIX_BYTES>() else {
        return Ok(None);
    };
    let len = i32::from_be_bytes(*prefix);
    if len < RESPONSE_HEADER_BYTES as i32 || len as usize > MAX_RESPONSE_FRAME_BYTES {
        return Err(ClientError::ResponseFrameLength {
            len,
            min: RESPONSE_HEADER_BYTES,
            max: MAX_RESPONSE_FRAME_BYTES,
        });
    }
    let total = LEN_PREFIX_BYTES + len as usize;
    if buf.len() < total {
        buf.reserve(total - buf.len());
        return Ok(None);
    }
    let frame: Bytes = buf.split_to(total).freeze();
    let (header, used) = ResponseHeader::decode(&frame[LEN_PREFIX_BYTES..])?;
    Ok(Some(RawResponse {
        header,
        body: frame.slice(LEN_PREFIX_BYTES + used..),
    }))
}

fn dispatch(shared: &Shared, response: RawResponse) -> Result<(), ClientError> {
    let received = response.header.correlation_id;
    match shared.match_response(received) {
        Matched::Answer(reply) => {
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
        for len in [0, 5, -1, MAX_RESPONSE_FRAME_BYTES as i32 + 1] {
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
