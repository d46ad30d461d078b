//! The writer task, and the gate through which a caller on an idle connection writes itself.
//!
//! Callers on many tasks send at once, and two interleaved writes would corrupt the stream.
//! Instead of a lock around the socket's asynchronous writes there is a bounded channel with one
//! consumer. That consumer also fixes the order in which requests reach the wire, and registers
//! each one in the pending FIFO *before* writing it, so an answer can never arrive for a request
//! the reader does not know about yet. The one exception, a caller writing through an idle
//! connection, keeps both rules (§ Writing through).
//!
//! Writes are gathered and sent with one vectored write (`writev`) when the channel runs dry (or
//! after [`MAX_SUBMISSIONS_PER_FLUSH`]), so a burst of small requests costs few syscalls. A
//! request is gathered as its encoded head and, for a PRODUCE, its record bytes as a second
//! piece: the batch's buffer itself, never copied into a frame or a write buffer. Two things
//! force an early flush: waiting for an in-flight permit (the answers that free one need the
//! broker to *see* the buffered requests), and nothing else queued. An `ack = NONE` caller is
//! told "written" only after the flush that carried its request.
//!
//! # Writing through
//!
//! A lone request should not pay a task hand-off: waking the writer task costs a thread
//! wake-up (tens of microseconds on an idle VM), more than the write itself. So on an idle
//! connection — the writer task has nothing in hand (no submission sent to it and not yet
//! written whole) and no request waits for its answer — a caller writes its request itself,
//! with one non-blocking vectored write, under the [`Gate`]'s lock (held only for that system
//! call, never across an `.await`). Requests pipelined behind others still go to the writer
//! task, which gathers them into one `writev`: written through one by one, 16 PRODUCEs in
//! flight on one connection cost a system call each and ran slower (`docs/client.md`). The
//! rules that keep the stream whole and in order:
//!
//! * The gate counts the submissions on their way through the writer task (`backlog`): a caller
//!   counts its own before it sends it to the channel, the writer task uncounts them once
//!   written. A caller writes through only while that count is zero, so it never overtakes a
//!   request submitted before it.
//! * It registers its request in the pending FIFO before the write, under the same lock, as the
//!   writer task does.
//! * A write the socket takes only in part leaves the rest with the gate (counted in `backlog`);
//!   the writer task writes that rest before anything else, since a frame begun on the wire must
//!   be finished before the next one starts.
//! * A caller that would have to wait for an in-flight permit goes through the channel: the
//!   writer task is the one that waits.

use std::io::IoSlice;
use std::sync::{Arc, Mutex, MutexGuard};

use booblik_protocol::ApiKey;
use bytes::{Buf, Bytes};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::{Notify, TryAcquireError, mpsc};

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

/// The socket's write half, shared by the writer task and the callers that write through
/// (module docs, § Writing through).
#[derive(Debug)]
pub(crate) struct Gate {
    state: Mutex<GateState>,
    /// Wakes the writer task when a write-through left a rest for it.
    rest_left: Notify,
}

#[derive(Debug)]
struct GateState {
    /// `None` once the writer task stopped: nothing may be written any more.
    socket: Option<Arc<OwnedWriteHalf>>,
    /// Submissions sent (or being sent) to the writer task, and a write-through's rest, not
    /// yet written whole. Writing through is allowed only at zero.
    backlog: usize,
    /// What a write-through could not write at once, to be written before anything else.
    rest: Vec<Bytes>,
    /// The `ack = NONE` reply of the request whose rest that is: "written" once it is.
    rest_reply: Option<Reply>,
}

/// What [`Gate::write_through`] did with a submission.
pub(crate) enum WriteThrough {
    /// It is on the wire, or with the gate for the writer task to finish, or failed with the
    /// connection: either way its reply will come.
    Taken,
    /// The connection is not idle (the writer task has work in hand, or a request waits for
    /// its answer) or no permit is free: send it to the channel, after counting it with
    /// [`Gate::count_queued`].
    Queue(Submission),
}

impl Gate {
    pub(crate) fn new(socket: OwnedWriteHalf) -> Self {
        Self {
            state: Mutex::new(GateState {
                socket: Some(Arc::new(socket)),
                backlog: 0,
                rest: Vec::new(),
                rest_reply: None,
            }),
            rest_left: Notify::new(),
        }
    }

    fn state(&self) -> MutexGuard<'_, GateState> {
        // Nothing panics while holding the lock; a poisoned lock still guards consistent state.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Writes `submission` on the caller's task when the connection is idle (module docs).
    pub(crate) fn write_through(&self, shared: &Shared, submission: Submission) -> WriteThrough {
        let mut state = self.state();
        let Some(socket) = state.socket.clone() else {
            return WriteThrough::Queue(submission);
        };
        // Only on an idle connection: requests pipelined behind others are gathered by the
        // writer task into one `writev` instead of a system call each (module docs).
        if state.backlog != 0 || !shared.nothing_pending() {
            return WriteThrough::Queue(submission);
        }
        let permit = if submission.expects_response {
            match Arc::clone(&shared.in_flight).try_acquire_owned() {
                Ok(permit) => Some(permit),
                // The writer task waits for a permit (or reports the closed connection).
                Err(_) => return WriteThrough::Queue(submission),
            }
        } else {
            None
        };
        let Submission {
            correlation_id,
            api,
            frame,
            records,
            expects_response: _,
            reply,
            submitted,
        } = submission;
        let (kind, written_reply) = match permit {
            Some(permit) => (
                PendingKind::Answered {
                    reply,
                    _permit: permit,
                },
                None,
            ),
            None => (PendingKind::Unanswered, Some(reply)),
        };
        if let Err(error) = shared.push(Pending {
            correlation_id,
            kind,
        }) {
            // Closed meanwhile: `push` failed an answered request's reply already.
            if let Some(reply) = written_reply {
                let _ = reply.send(Err(error));
            }
            return WriteThrough::Taken;
        }
        let records = records.unwrap_or_default();
        let total = frame.len() + records.len();
        let slices = [IoSlice::new(&frame), IoSlice::new(&records)];
        let written = match socket.try_write_vectored(&slices) {
            Ok(written) => written,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => 0,
            Err(error) => {
                drop(state);
                shared.fail(write_failed(shared, &error));
                if let Some(reply) = written_reply {
                    let _ = reply.send(Err(shared.closed_error()));
                }
                return WriteThrough::Taken;
            }
        };
        tracing::trace!(
            correlation_id,
            api = api.name(),
            written,
            "request written through"
        );
        if written == total {
            drop(state);
            if booblik_protocol::probe::ENABLED && api == ApiKey::Produce {
                submitted.hop("c1 client: PRODUCE submitted -> written to the socket");
            }
            if let Some(reply) = written_reply {
                let _ = reply.send(Ok(None));
            }
        } else {
            // The socket's buffer is full: the writer task finishes the frame, first.
            let mut rest = vec![frame];
            rest.extend((!records.is_empty()).then_some(records));
            advance(&mut rest, written);
            state.backlog += 1;
            state.rest = rest;
            state.rest_reply = written_reply;
            // Under the lock: whoever queues next counts itself after this, so the writer task
            // is told of the rest before it can receive anything submitted after it.
            self.rest_left.notify_one();
            drop(state);
        }
        WriteThrough::Taken
    }

    /// Counts a submission about to be sent to the writer task: no caller writes through
    /// until the writer task has written it. The count is undone when the returned guard is
    /// dropped before [`Queued::sent`] (the send timed out, failed, or was cancelled), so a
    /// submission that never reached the writer task cannot hold writing through off for good.
    pub(crate) fn count_queued(&self) -> Queued<'_> {
        self.state().backlog += 1;
        Queued {
            gate: self,
            sent: false,
        }
    }

    /// `count` submissions left the backlog (written, or never sent).
    pub(crate) fn uncount(&self, count: usize) {
        let mut state = self.state();
        state.backlog = state.backlog.saturating_sub(count);
    }

    /// A write-through's rest and its `ack = NONE` reply, if one was left.
    fn take_rest(&self) -> Option<(Vec<Bytes>, Option<Reply>)> {
        let mut state = self.state();
        if state.rest.is_empty() {
            return None;
        }
        Some((std::mem::take(&mut state.rest), state.rest_reply.take()))
    }

    /// The writer task stopped: nothing is written any more, and the socket's write half is
    /// closed once the writer task drops its own handle on it.
    fn close(&self) {
        self.state().socket = None;
    }
}

/// A submission counted in the gate's backlog on its way to the writer task.
pub(crate) struct Queued<'a> {
    gate: &'a Gate,
    sent: bool,
}

impl Queued<'_> {
    /// It is in the writer task's channel: the writer task uncounts it once written.
    pub(crate) fn sent(mut self) {
        self.sent = true;
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        if !self.sent {
            self.gate.uncount(1);
        }
    }
}

/// Drops the first `written` bytes of `pieces`: the pieces written whole, and the front of a
/// piece written in part.
fn advance(pieces: &mut Vec<Bytes>, mut written: usize) {
    let mut whole = 0;
    while written > 0 {
        let piece = &mut pieces[whole];
        if written >= piece.len() {
            written -= piece.len();
            whole += 1;
        } else {
            piece.advance(written);
            written = 0;
        }
    }
    pieces.drain(..whole);
}

/// The socket's write half and the pieces gathered for the next vectored write.
#[derive(Debug)]
struct Out {
    write: Arc<OwnedWriteHalf>,
    pieces: Vec<Bytes>,
    /// Submissions gathered in `pieces` (the gate's backlog counts them until written).
    gathered: usize,
}

impl Out {
    fn push(&mut self, piece: Bytes) {
        if !piece.is_empty() {
            self.pieces.push(piece);
        }
    }

    /// Writes every gathered piece, in order.
    async fn flush(&mut self) -> std::io::Result<()> {
        while !self.pieces.is_empty() {
            let end = self.pieces.len().min(MAX_IOVECS_PER_WRITE);
            let slices: Vec<IoSlice<'_>> = self.pieces[..end]
                .iter()
                .map(|piece| IoSlice::new(piece))
                .collect();
            let written = match self.write.try_write_vectored(&slices) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(written) => written,
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                    drop(slices);
                    self.write.writable().await?;
                    continue;
                }
                Err(error) => return Err(error),
            };
            drop(slices);
            advance(&mut self.pieces, written);
        }
        Ok(())
    }
}

/// Runs until the connection closes or every handle is gone.
pub(crate) async fn run(
    shared: Arc<Shared>,
    mut submissions: mpsc::Receiver<Submission>,
    gate: Arc<Gate>,
) {
    let mut closed = shared.closed_signal();
    let Some(write) = gate.state().socket.clone() else {
        return;
    };
    let mut out = Out {
        write,
        pieces: Vec::with_capacity(MAX_IOVECS_PER_WRITE),
        gathered: 0,
    };
    let failure = tokio::select! {
        biased;
        _ = closed.wait_for(|closed| *closed) => None,
        failure = write_loop(&shared, &gate, &mut submissions, &mut out) => Some(failure),
    };
    if let Some(failure) = failure {
        shared.fail(failure);
    }
    gate.close();
    if let Some((_, Some(reply))) = gate.take_rest() {
        let _ = reply.send(Err(shared.closed_error()));
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
    gate: &Gate,
    submissions: &mut mpsc::Receiver<Submission>,
    out: &mut Out,
) -> ClientError {
    let mut written: Vec<Reply> = Vec::new();
    let mut stamps = Vec::new();
    loop {
        let first = tokio::select! {
            biased;
            () = gate.rest_left.notified() => None,
            first = submissions.recv() => match first {
                Some(first) => Some(first),
                None => return ClientError::closed("the connection was dropped by its owner"),
            },
        };
        // A write-through's rest goes first: its frame is already begun on the wire.
        if let Some((rest, reply)) = gate.take_rest() {
            out.pieces.splice(0..0, rest);
            out.gathered += 1;
            written.extend(reply);
        }
        let mut next = first;
        let mut count = 0;
        while let Some(submission) = next.take() {
            if booblik_protocol::probe::ENABLED && submission.api == ApiKey::Produce {
                stamps.push(submission.submitted);
            }
            if let Err(e) = write_one(shared, gate, out, submission, &mut written).await {
                return e;
            }
            count += 1;
            if count < MAX_SUBMISSIONS_PER_FLUSH {
                next = submissions.try_recv().ok();
            }
        }
        if let Err(e) = flush(shared, gate, out, &mut written).await {
            return e;
        }
        for submitted in stamps.drain(..) {
            submitted.hop("c1 client: PRODUCE submitted -> written to the socket");
        }
    }
}

async fn flush(
    shared: &Shared,
    gate: &Gate,
    out: &mut Out,
    written: &mut Vec<Reply>,
) -> Result<(), ClientError> {
    out.flush().await.map_err(|e| write_failed(shared, &e))?;
    // Written whole: callers may write through again once nothing else is in hand.
    gate.uncount(std::mem::take(&mut out.gathered));
    for reply in written.drain(..) {
        let _ = reply.send(Ok(None));
    }
    Ok(())
}

async fn write_one(
    shared: &Shared,
    gate: &Gate,
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
                flush(shared, gate, out, written).await?;
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
    out.gathered += 1;
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

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use tokio::io::AsyncReadExt;
    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::oneshot;

    use super::*;
    use crate::connection::config::ConnectionConfig;

    /// A gate over a connected socket, the shared state, and the peer's end to read from.
    async fn gate() -> (Gate, Shared, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (client, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
        let (_read, write) = client.unwrap().into_split();
        let shared = Shared::new(addr, &ConnectionConfig::default());
        (Gate::new(write), shared, accepted.unwrap().0)
    }

    /// A request of `bytes` bytes expecting an answer, and where its outcome goes.
    fn submission(
        correlation_id: i32,
        bytes: &[u8],
    ) -> (
        Submission,
        oneshot::Receiver<Result<Option<crate::connection::response::RawResponse>, ClientError>>,
    ) {
        let (reply, outcome) = oneshot::channel();
        let submission = Submission {
            correlation_id,
            api: ApiKey::Metadata,
            frame: Bytes::copy_from_slice(bytes),
            records: None,
            expects_response: true,
            reply,
            submitted: booblik_protocol::probe::Stamp::now(),
        };
        (submission, outcome)
    }

    #[tokio::test]
    async fn an_idle_connection_s_request_is_written_by_its_caller() {
        let (gate, shared, mut peer) = gate().await;
        let (request, _outcome) = submission(1, b"first");
        assert!(matches!(
            gate.write_through(&shared, request),
            WriteThrough::Taken
        ));
        let mut read = [0u8; 5];
        peer.read_exact(&mut read).await.unwrap();
        assert_eq!(&read, b"first");
        assert!(
            !shared.nothing_pending(),
            "registered before it was written"
        );
    }

    #[tokio::test]
    async fn a_caller_does_not_write_ahead_of_a_submission_the_writer_task_has_not_written() {
        let (gate, shared, _peer) = gate().await;
        // A submission on its way through the writer task's channel: nothing is pending yet
        // (the writer task registers it when it takes it), but it is counted.
        let queued = gate.count_queued();
        queued.sent();
        let (request, _outcome) = submission(2, b"second");
        assert!(
            matches!(gate.write_through(&shared, request), WriteThrough::Queue(_)),
            "a request written through now would overtake the one in the channel"
        );
        // Once the writer task has written it, callers write through again.
        gate.uncount(1);
        let (request, _outcome) = submission(3, b"third");
        assert!(matches!(
            gate.write_through(&shared, request),
            WriteThrough::Taken
        ));
    }

    #[tokio::test]
    async fn a_submission_never_sent_to_the_writer_task_does_not_stop_writing_through() {
        let (gate, shared, _peer) = gate().await;
        // Counted, then dropped unsent: a send that timed out, or a caller cancelled.
        drop(gate.count_queued());
        let (request, _outcome) = submission(4, b"fourth");
        assert!(matches!(
            gate.write_through(&shared, request),
            WriteThrough::Taken
        ));
    }

    #[tokio::test]
    async fn a_write_the_socket_takes_in_part_leaves_exactly_the_rest_for_the_writer_task() {
        let (gate, shared, mut peer) = gate().await;
        let socket = gate.state().socket.clone().unwrap();
        socket.writable().await.unwrap();
        drop(socket);
        // 16 MiB in two pieces (head and records), far more than a socket takes at once while
        // its peer reads nothing.
        let whole: Vec<u8> = (0..16 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
        let (head, records) = whole.split_at(whole.len() / 2);
        let (mut request, _outcome) = submission(7, head);
        request.records = Some(Bytes::copy_from_slice(records));
        assert!(matches!(
            gate.write_through(&shared, request),
            WriteThrough::Taken
        ));

        let (rest, _) = gate.take_rest().expect("the socket took only a part");
        assert_eq!(
            gate.state().backlog,
            1,
            "the rest is counted: nobody writes through ahead of it"
        );
        let rest_bytes: usize = rest.iter().map(Bytes::len).sum();
        assert!(
            rest_bytes < whole.len(),
            "the caller wrote a first part itself"
        );
        let mut wire = vec![0u8; whole.len() - rest_bytes];
        peer.read_exact(&mut wire).await.unwrap();
        wire.extend(rest.iter().flat_map(|piece| piece.iter().copied()));
        assert!(
            wire == whole,
            "what reached the wire and the rest make the request, each byte once"
        );
    }

    #[tokio::test]
    async fn a_request_pipelined_behind_an_unanswered_one_goes_to_the_writer_task() {
        let (gate, shared, _peer) = gate().await;
        let (first, _first_outcome) = submission(5, b"fifth");
        assert!(matches!(
            gate.write_through(&shared, first),
            WriteThrough::Taken
        ));
        let (second, _second_outcome) = submission(6, b"sixth");
        assert!(
            matches!(gate.write_through(&shared, second), WriteThrough::Queue(_)),
            "pipelined requests are gathered by the writer task into one writev"
        );
    }
}
