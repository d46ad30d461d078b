//! What applying a request yields: the answer to send, or what it waits for, or a close.
//!
//! Handlers return a [`Reply`] and never touch the socket; the session queues replies in request
//! order and writes each once it is ready. So a handler is tested by looking at its reply.

use std::sync::Arc;

use booblik_protocol::probe::Stamp;
use booblik_protocol::{FETCH_RESPONSE_HEADER_BYTES, LEN_PREFIX_BYTES, RESPONSE_HEADER_BYTES};

use super::session::SessionError;
use crate::storage::{AppendAnswer, Partition, ReadSlice, Written};

/// The outcome of applying one request.
#[derive(Debug)]
pub(crate) enum Reply {
    /// One encoded answer frame, success or error.
    Frame(Vec<u8>),
    /// No answer at all: a PRODUCE with ack NONE that was queued.
    Nothing,
    /// A PRODUCE whose batch is queued to its partition's writer, or was appended inline; the
    /// answer is known once the batch is written (WRITTEN) or covered by an fsync (FORCED).
    Append(PendingAppend),
    /// A FETCH answer: its header, then the slice's bytes (sent with `sendfile`, or read first).
    Fetch(FetchReply),
    /// Close the connection once the earlier answers are written: this request and every one
    /// after it go unanswered.
    Close(SessionError),
}

/// A queued PRODUCE's answer to come.
#[derive(Debug)]
pub(crate) struct PendingAppend {
    pub(crate) correlation_id: i32,
    pub(crate) partition: Arc<Partition>,
    /// Taken by the session before the reply is queued: a later read of the connection waits
    /// for it, so it sees this batch.
    pub(crate) written: Option<Written>,
    pub(crate) answer: AppendAnswer,
    /// When its frame was decoded (the hop probe).
    pub(crate) received: Stamp,
}

/// A FETCH answer ready to send.
#[derive(Debug)]
pub(crate) struct FetchReply {
    /// The response frame up to the payload (its length covers the payload).
    pub(crate) header: Vec<u8>,
    pub(crate) partition: Arc<Partition>,
    /// The payload's bytes; pins its segment until sent.
    pub(crate) slice: ReadSlice,
    /// When the reply was cut (the hop probe).
    pub(crate) cut: Stamp,
}

/// Bytes of a PRODUCE success frame.
const PRODUCE_ANSWER_BYTES: usize = LEN_PREFIX_BYTES + RESPONSE_HEADER_BYTES + 16;

impl Reply {
    /// True when the answerer can write this answer as soon as its turn comes, without
    /// waiting for a write or an fsync (a FETCH's payload may still need a read).
    pub(crate) fn is_ready(&self) -> bool {
        match self {
            Reply::Frame(_) | Reply::Fetch(_) => true,
            Reply::Append(append) => append.answer.is_known(),
            Reply::Nothing | Reply::Close(_) => false,
        }
    }

    /// Bytes of memory the reply holds while it waits in the session's answer queue (a FETCH
    /// payload is not read until its turn to be written, so only its header counts).
    pub(crate) fn queued_bytes(&self) -> usize {
        match self {
            Reply::Frame(frame) => frame.len(),
            Reply::Append(_) => PRODUCE_ANSWER_BYTES,
            Reply::Fetch(_) => FETCH_RESPONSE_HEADER_BYTES,
            Reply::Nothing | Reply::Close(_) => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use booblik_protocol::ProduceResponse;

    use super::*;

    #[test]
    fn a_produce_answer_is_as_long_as_its_constant_says() {
        let mut frame = Vec::new();
        booblik_protocol::encode_response(
            1,
            &ProduceResponse {
                base_offset: 0,
                log_end_offset: 1,
            },
            &mut frame,
        );
        assert_eq!(frame.len(), PRODUCE_ANSWER_BYTES);
    }
}
