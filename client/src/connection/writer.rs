//! The writer task: the only code that writes to the socket.
//!
//! Callers on many tasks send at once, and two interleaved writes would corrupt the stream.
//! Instead of a lock around the socket there is a bounded channel with one consumer. That
//! consumer also fixes the order in which requests reach the wire, and registers each one in
//! the pending FIFO *before* writing it, so an answer can never arrive for a request the reader
//! does not know about yet.
//!
//! Writes are gathered and sent with one vectored write (`writev`) when the channel runs dry (or
//! after [`MAX_SUBMISSIONS_PER_FLUSH`]), so a burst of small requests costs few syscalls. A
//! request is gathered as its encoded head and, for a PRODUCE, its record bytes as a second
//! piece: the batch's buffer itself, never copied into a frame or a write buffer. Two things
//! force an early flush: waiting for an in-flight permit (the answers that free one need the
//! broker to *see* the buffered requests), and nothing else queued. An `ack = NONE` caller is
//! told "written" only after the flush that carried its request.

use std::io::IoSlice;
use std::sync::Arc;

use booblik_protocol::ApiKey;
use bytes::{Buf, Bytes};
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::{TryAcquireError, mpsc};

use crate::connection::pending::{Pending, PendingKind, Reply};
use crate::connection::shared::Shared;
use crate::error::ClientError;

/// Submissions coalesced into one flush at most.
pub(crate) const MAX_SUBMISSIONS_PER_FLUSH: usize = 64;
/// Pieces handed to one `writev` at most (each submission has one or two; Linux takes 1024).
const MAX_IOVECS_PER_WRITE: usize = 2 * MAX_SUBMISSIONS_PER_FLUSH;

/// A whole encoded request on its way to the writer.
#[derive(Debug)]
pub(crate) struct Submission {
    /// Its correlationId (already in `frame`).
    pub(crate) correlation_id: i32,
    /// What it is.
    pub(crate) api: ApiKey,
    /// Length prefix, header and body — for a PRODUCE only up to its records.
    pub(crate) frame: Bytes,
    /// A PRODUCE's record bytes, written right after `frame` (see
    /// `booblik_protocol::Request::encode_vectored`).
    pub(crate) records: Option<Bytes>,
    /// False for `ack = NONE` PRODUCE.
    pub(crate) expects_response: bool,
    /// Where the outcome goes.
    pub(crate) reply: Reply,
    /// When it was queued (the hop probe).
    pub(crate) submitted: booblik_protocol::probe::Stamp,
}

/// The socket's write half and the pieces gathered for the next vectored write.
#[derive(Debug)]
struct Out {
    write: OwnedWriteHalf,
    pieces: Vec<Bytes>,
}

impl Out {
    fn push(&mut self, piece: Bytes) {
        if !piece.is_empty() {
            self.pieces.push(piece);
        }
    }

    /// Writes every gathered piece, in order.
    async fn flush(&mut self) -> std::io::Result<()> {
        let mut first = 0;
        while first < self.pieces.len() {
            let end = self.pieces.len().min(first + MAX_IOVECS_PER_WRITE);
            let slices: Vec<IoSlice<'_>> = self.pieces[first..end]
                .iter()
                .map(|piece| IoSlice::new(piece))
                .collect();
            let mut written = self.write.write_vectored(&slices).await?;
            drop(slices);
            if written == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            // Drop the pieces written whole; advance into a piece written in part.
            while written > 0 {
                let piece = &mut self.pieces[first];
                if written >= piece.len() {
                    written -= piece.len();
                    first += 1;
                } else {
                    piece.advance(written);
                    written = 0;
                }
            }
        }
        self.pieces.clear();
        Ok(())
    }
}

/// Runs until the connection closes or every handle is gone.
pub(crate) async fn run(
    shared: Arc<Shared>,
    mut submissions: mpsc::Receiver<Submission>,
    write: OwnedWriteHalf,
) {
    let mut closed = shared.closed_signal();
    let mut out = Out {
        write,
        pieces: Vec::with_capacity(MAX_IOVECS_PER_WRITE),
    };
    let failure = tokio::select! {
        biased;
        _ = closed.wait_for(|closed| *closed) => None,
        failure = write_loop(&shared, &mut submissions, &mut out) => Some(failure),
    };
    if let Some(failure) = failure {
        shared.fail(failure);
    }
    // Whatever is still queued will never be written.
    submissions.close();
    while let Ok(submission) = submissions.try_recv() {
        let _ = submission.reply.send(Err(shared.closed_error()));
    }
    // Dropping `out` closes our half of the socket.
}

/// Writes submissions until something fails; returns the failure.
async fn write_loop(
    shared: &Shared,
    submissions: &mut mpsc::Receiver<Submission>,
    out: &mut Out,
) -> ClientError {
    let mut written: Vec<Reply> = Vec::new();
    let mut stamps = Vec::new();
    loop {
        let Some(first) = submissions.recv().await else {
            return ClientError::closed("the connection was dropped by its owner");
        };
        let mut next = Some(first);
        let mut count = 0;
        while let Some(submission) = next.take() {
            if booblik_protocol::probe::ENABLED && submission.api == ApiKey::Produce {
                stamps.push(submission.submitted);
            }
            if let Err(e) = write_one(shared, out, submission, &mut written).await {
                return e;
            }
            count += 1;
            if count < MAX_SUBMISSIONS_PER_FLUSH {
                next = submissions.try_recv().ok();
            }
        }
        if let Err(e) = flush(shared, out, &mut written).await {
            return e;
        }
        for submitted in stamps.drain(..) {
            submitted.hop("c1 client: PRODUCE submitted -> written to the socket");
        }
    }
}

async fn flush(
    shared: &Shared,
    out: &mut Out,
    written: &mut Vec<Reply>,
) -> Result<(), ClientError> {
    out.flush().await.map_err(|e| write_failed(shared, &e))?;
    for reply in written.drain(..) {
        let _ = reply.send(Ok(None));
    }
    Ok(())
}

async fn write_one(
    shared: &Shared,
    out: &mut Out,
    submission: Submission,
    written: &mut Vec<Reply>,
) -> Result<(), ClientError> {
    let Submission {
        correlation_id,
        api,
        frame,
        records,
        expects_response,
        reply,
        submitted: _,
    } = submission;
    let (kind, written_reply) = if expects_response {
        let permit = match Arc::clone(&shared.in_flight).try_acquire_owned() {
            Ok(permit) => permit,
            Err(TryAcquireError::NoPermits) => {
                // The answers that free a permit need the broker to see what is buffered.
                flush(shared, out, written).await?;
                if let Ok(permit) = Arc::clone(&shared.in_flight).acquire_owned().await {
                    permit
                } else {
                    let error = shared.closed_error();
                    let _ = reply.send(Err(error.clone()));
                    return Err(error);
                }
            }
            Err(TryAcquireError::Closed) => {
                let error = shared.closed_error();
                let _ = reply.send(Err(error.clone()));
                return Err(error);
            }
        };
        (
            PendingKind::Answered {
                reply,
                _permit: permit,
            },
            None,
        )
    } else {
        (PendingKind::Unanswered, Some(reply))
    };
    let pending = Pending {
        correlation_id,
        kind,
    };
    if let Err(error) = shared.push(pending) {
        if let Some(reply) = written_reply {
            let _ = reply.send(Err(error.clone()));
        }
        return Err(error);
    }
    let bytes = frame.len() + records.as_ref().map_or(0, Bytes::len);
    out.push(frame);
    if let Some(records) = records {
        out.push(records);
    }
    tracing::trace!(correlation_id, api = api.name(), bytes, "request gathered");
    if let Some(reply) = written_reply {
        written.push(reply);
    }
    Ok(())
}

fn write_failed(shared: &Shared, error: &std::io::Error) -> ClientError {
    ClientError::closed(format!(
        "writing to the broker at {} failed: {error}",
        shared.peer
    ))
}
