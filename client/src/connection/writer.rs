//! The writer task: the only code that writes to the socket.
//!
//! Callers on many tasks send at once, and two interleaved writes would corrupt the stream.
//! Instead of a lock around the socket there is a bounded channel with one consumer. That
//! consumer also fixes the order in which requests reach the wire, and registers each one in
//! the pending FIFO *before* writing it, so an answer can never arrive for a request the reader
//! does not know about yet.
//!
//! Writes go through a buffer that is flushed when the channel runs dry (or after
//! [`MAX_SUBMISSIONS_PER_FLUSH`]), so a burst of small requests costs few syscalls. Two things
//! force an early flush: waiting for an in-flight permit (the answers that free one need the
//! broker to *see* the buffered requests), and nothing else queued. An `ack = NONE` caller is
//! told "written" only after the flush that carried its request.

use std::sync::Arc;

use booblik_protocol::ApiKey;
use bytes::Bytes;
use tokio::io::{AsyncWriteExt, BufWriter};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::{TryAcquireError, mpsc};

use crate::connection::pending::{Pending, PendingKind, Reply};
use crate::connection::shared::Shared;
use crate::error::ClientError;

/// Submissions coalesced into one flush at most.
pub(crate) const MAX_SUBMISSIONS_PER_FLUSH: usize = 64;
/// Capacity of the write buffer; larger frames are written through it directly.
pub(crate) const WRITE_BUFFER_BYTES: usize = 64 * 1024;

/// A whole encoded request on its way to the writer.
#[derive(Debug)]
pub(crate) struct Submission {
    /// Its correlationId (already in `frame`).
    pub(crate) correlation_id: i32,
    /// What it is.
    pub(crate) api: ApiKey,
    /// Length prefix, header and body.
    pub(crate) frame: Bytes,
    /// False for `ack = NONE` PRODUCE.
    pub(crate) expects_response: bool,
    /// Where the outcome goes.
    pub(crate) reply: Reply,
}

type Out = BufWriter<OwnedWriteHalf>;

/// Runs until the connection closes or every handle is gone.
pub(crate) async fn run(
    shared: Arc<Shared>,
    mut submissions: mpsc::Receiver<Submission>,
    write: OwnedWriteHalf,
) {
    let mut closed = shared.closed_signal();
    let mut out = BufWriter::with_capacity(WRITE_BUFFER_BYTES, write);
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
    loop {
        let Some(first) = submissions.recv().await else {
            return ClientError::closed("the connection was dropped by its owner");
        };
        let mut next = Some(first);
        let mut count = 0;
        while let Some(submission) = next.take() {
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
        expects_response,
        reply,
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
    out.write_all(&frame)
        .await
        .map_err(|e| write_failed(shared, &e))?;
    tracing::trace!(
        correlation_id,
        api = api.name(),
        bytes = frame.len(),
        "request written"
    );
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
