//! One client connection: apply in order, wait together.
//!
//! A connection is pipelined: the client may send many requests without waiting. The session
//! runs two halves in one task:
//!
//! * the **applier** reads frames and applies them one at a time, in arrival order (SPEC §2):
//!   a PRODUCE is applied when its batch is queued to its partition's writer, which fixes its
//!   place among that partition's appends; a FETCH or METADATA is applied once every earlier
//!   WRITTEN or FORCED PRODUCE of the connection is written, so it sees them. Each request's
//!   [`Reply`] goes into the answer queue, in request order;
//! * the **answerer** takes the queue in order and writes each answer once it is ready: a
//!   PRODUCE's when its ack holds (written, or covered by an fsync), a FETCH's after reading its
//!   payload if the page cache does not hold it.
//!
//! So a FORCED PRODUCE's wait for its fsync does not hold back the requests after it: a
//! pipeline of FORCED batches reaches the writer while the previous fsync runs, and the next
//! fsync covers them all (group commit within one connection, as a Redis pipeline's writes
//! share one fsync). Answers still leave strictly in request order, each as soon as it and
//! every answer before it are ready. Ready answers are gathered and written together before
//! the answerer waits for anything, and the applier gives the answerer a turn after every
//! [`MAX_FRAMES_APPLIED_IN_A_ROW`] frames of a burst: pipelining costs one write per few
//! requests, not one per request, and the client refills its window while the rest of the
//! burst is applied.
//!
//! When an answer is a close — an append the log could not take (a poisoned partition, an I/O
//! error, a full disk) — the answers before it are written and the connection is closed: the
//! requests after it were applied (their batches may be in the log) but are never answered, and
//! the client fails them all, as it must for any connection lost with requests outstanding.
//!
//! Error rules (SPEC §2): a frame length out of `1..=MAX_FRAME_BYTES` closes the connection with
//! no answer, because framing is lost (after the answers before it); every other problem is
//! answered with an error code and the connection stays open. Only a frame shorter than the
//! request header is answered with correlationId 0 (there is no id to echo).
//!
//! Bounds per connection: the input buffer holds at most one frame plus one read
//! ([`READ_CHUNK_BYTES`]); at most [`MAX_WAITING_ANSWERS`] answers wait in the queue, holding at
//! most [`MAX_WAITING_ANSWER_BYTES`] (a larger answer waits for an empty queue and goes alone);
//! when the queue is full the applier stops reading, so a client that does not read its answers
//! fills the socket buffers and its own writes block. Gathered answers are written once
//! [`FLUSH_THRESHOLD_BYTES`] gather; a frame must arrive within `frame_read_timeout_ms`, a write
//! must finish within `write_timeout_ms`, and a connection with nothing in flight is closed
//! after `idle_timeout_ms` without a request.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use booblik_protocol::probe::{self, Stamp};
use booblik_protocol::{Decoded, RequestBody, WireError, split_request_frame};
use bytes::{BufMut, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{ReadHalf, WriteHalf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio::time::Instant;
use tracing::{debug, warn};

use super::Shared;
use super::connections::{Admitted, ConnectionSlot};
use super::fetch::{self, Residency};
use super::handlers;
use super::metrics as m;
use super::reply::{FetchReply, Reply};
use super::sendfile::send_file;
use crate::config::FetchMode;
use crate::storage::{StorageError, Written};

/// Bytes asked of the socket per read.
pub(crate) const READ_CHUNK_BYTES: usize = 64 * 1024;
/// Gathered responses are written once they reach this size.
pub(crate) const FLUSH_THRESHOLD_BYTES: usize = 64 * 1024;
/// Most frames the applier applies in a row, while more of them wait in the input buffer,
/// before it lets the answerer write the answers ready so far.
///
/// Why: a pipelining client writes its window of requests at once. Applied whole before any
/// answer left, the window's answers also left at once, so client and broker took turns on
/// the CPUs, each idle while the other worked, and the window's round trip was the sum of
/// both. Answering every few frames lets the client refill its window while the rest is
/// applied. One connection, WRITTEN, 10 × 128 B batches, 16 in flight: 2.16 M records/s
/// (1.83–2.52 M) against 1.59 M (1.18–1.73 M) applying the whole window (18 invocations on one
/// host); a turn every frame lost more to writes than it won (docs/benchmarks.md § Answering
/// while a burst is applied).
///
/// Not for a burst with a FORCED batch appended inline: its answer waits for an fsync that the
/// answerer runs on this thread, and a turn taken early would sync a part of the burst and
/// leave the rest to a later fsync (measured: 16 in flight fell to a third).
pub const MAX_FRAMES_APPLIED_IN_A_ROW: usize = 3;
/// Most answers one connection may have waiting: applied, not yet written. A pipeline deeper
/// than this waits in the socket. Each waiting answer holds at most a small frame, a queued
/// batch's answer channel, or a FETCH's segment pin.
pub const MAX_WAITING_ANSWERS: usize = 256;
/// Most bytes of encoded answers one connection may have waiting (FETCH payloads are read only
/// when due, so they do not count). A larger answer (a METADATA of thousands of partitions)
/// waits for an empty queue and then goes alone.
pub const MAX_WAITING_ANSWER_BYTES: usize = 1024 * 1024;
/// Largest heap FETCH buffer a session keeps between FETCHes (heap mode). Larger payloads (up to
/// 8 MiB) get a buffer that is freed after its write, so idle connections that once fetched a lot
/// do not hold `max_connections` × 8 MiB.
pub(crate) const MAX_KEPT_HEAP_FETCH_BUFFER_BYTES: usize = 1024 * 1024;
/// Largest FETCH payload copied into the gathered answers instead of sent on its own (with
/// `sendfile`, or from the heap buffer): a follower's few records. Larger payloads are cheaper
/// sent without the copy.
pub const INLINE_FETCH_MAX_BYTES: usize = 16 * 1024;

/// Why a session ended early. Each becomes a `cause` label on the failure counter.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionError {
    #[error("socket error: {0}")]
    Io(#[from] std::io::Error),
    #[error("framing lost: {0}")]
    Framing(WireError),
    #[error("peer closed the connection inside a frame ({have} bytes of it received)")]
    TruncatedFrame { have: usize },
    #[error("no complete frame within {0} ms")]
    FrameTimeout(u64),
    #[error("idle for {0} ms")]
    IdleTimeout(u64),
    #[error("response not written within {0} ms (the client stopped reading)")]
    WriteTimeout(u64),
    #[error("storage failed: {0}")]
    Storage(#[from] StorageError),
}

impl SessionError {
    fn cause(&self) -> &'static str {
        match self {
            Self::Io(_) => "io",
            Self::Framing(_) => "framing",
            Self::TruncatedFrame { .. } => "truncated_frame",
            Self::FrameTimeout(_) => "frame_timeout",
            Self::IdleTimeout(_) => "idle_timeout",
            Self::WriteTimeout(_) => "write_timeout",
            Self::Storage(_) => "storage",
        }
    }
}

pub(crate) async fn run(
    mut stream: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
    shutdown: watch::Receiver<bool>,
    admitted: Admitted,
) {
    metrics::gauge!(m::CONNECTIONS_OPEN).increment(1.0);
    // Responses are small and latency-bound (claims, acks): do not let Nagle hold them.
    let _ = stream.set_nodelay(true);
    debug!(%peer, "connection opened");
    match serve(&mut stream, &shared, shutdown, admitted.slot()).await {
        Ok(()) => debug!(%peer, "connection closed"),
        Err(error) => {
            metrics::counter!(m::SESSION_FAILURES, "cause" => error.cause()).increment(1);
            warn!(%peer, cause = error.cause(), %error, "session ended by an error");
        }
    }
    drop(stream);
    drop(admitted);
    metrics::gauge!(m::CONNECTIONS_OPEN).decrement(1.0);
    metrics::counter!(m::CONNECTIONS_CLOSED).increment(1);
}

/// Runs both halves until the connection ends: the applier may finish first (the client
/// closed, framing was lost, shutdown), and then the answerer writes what is queued; if the
/// answerer finishes first (a write failed, an answer was a close), the applier is dropped.
async fn serve(
    stream: &mut TcpStream,
    shared: &Shared,
    shutdown: watch::Receiver<bool>,
    slot: &ConnectionSlot,
) -> Result<(), SessionError> {
    let (reader, writer) = stream.split();
    let (answers, queued) = mpsc::channel(MAX_WAITING_ANSWERS);
    let in_flight = InFlight {
        requests: AtomicUsize::new(0),
        slot,
    };
    let applier = Applier {
        reader,
        shared,
        shutdown,
        slot,
        in_flight: &in_flight,
        inbuf: BytesMut::with_capacity(READ_CHUNK_BYTES),
        answers,
        answer_bytes: Arc::new(Semaphore::new(MAX_WAITING_ANSWER_BYTES)),
        unwritten: Vec::new(),
    };
    let answerer = Answerer {
        writer,
        shared,
        in_flight: &in_flight,
        queued,
        outbuf: BytesMut::with_capacity(FLUSH_THRESHOLD_BYTES),
        gathered: 0,
        heap_fetch_buf: Vec::new(),
        stamps: Vec::new(),
        fetch_stamps: Vec::new(),
    };
    let applying = applier.run();
    let answering = answerer.run();
    tokio::pin!(applying, answering);
    // The answerer first: when the applier yields its turn (`MAX_FRAMES_APPLIED_IN_A_ROW`), the
    // next poll of this task writes what is ready before the applier goes on. (In tokio's random
    // branch order about half of the turns were lost; docs/benchmarks.md § Answering while a
    // burst is applied has the other orders measured.)
    tokio::select! {
        biased;
        answered = &mut answering => answered,
        () = &mut applying => answering.await,
    }
}

/// Requests read whose answers are not written yet; keeps the connection's slot busy or idle.
struct InFlight<'a> {
    requests: AtomicUsize,
    slot: &'a ConnectionSlot,
}

impl InFlight<'_> {
    /// A request was read. False when the connection was evicted first: do not apply it.
    fn begin(&self) -> bool {
        self.requests.fetch_add(1, Ordering::Relaxed) > 0 || self.slot.busy()
    }

    /// `count` requests are done: answered and written, or (ack NONE) applied.
    fn end(&self, count: usize) {
        if count > 0 && self.requests.fetch_sub(count, Ordering::Relaxed) == count {
            self.slot.idle();
        }
    }

    fn any(&self) -> bool {
        self.requests.load(Ordering::Relaxed) > 0
    }
}

/// A reply in the answer queue, with its share of [`MAX_WAITING_ANSWER_BYTES`].
struct Queued {
    reply: Reply,
    _bytes: OwnedSemaphorePermit,
}

/// The reading and applying half.
struct Applier<'a> {
    reader: ReadHalf<'a>,
    shared: &'a Shared,
    shutdown: watch::Receiver<bool>,
    slot: &'a ConnectionSlot,
    in_flight: &'a InFlight<'a>,
    inbuf: BytesMut,
    answers: mpsc::Sender<Queued>,
    answer_bytes: Arc<Semaphore>,
    /// Queued appends of this connection not known to be written yet (at most one per waiting
    /// answer): a later read waits for them.
    unwritten: Vec<Written>,
}

impl Applier<'_> {
    async fn run(mut self) {
        match self.serve().await {
            Ok(()) | Err(Stop::AnswererGone) => {}
            // Close after the answers already queued.
            Err(Stop::Failed(error)) => {
                let _ = self.queue(Reply::Close(error)).await;
            }
        }
    }

    async fn serve(&mut self) -> Result<(), Stop> {
        let config = &self.shared.config;
        let (idle_ms, frame_ms) = (config.idle_timeout_ms, config.frame_read_timeout_ms);
        // When the first byte of a still-incomplete frame arrived (slow-loris guard).
        let mut frame_started: Option<Instant> = None;
        loop {
            // Bytes still missing of the frame in progress (of its prefix, until that is whole).
            let missing_bytes: usize;
            // Frames applied since the answerer last had a turn, and whether any of their
            // answers can be written at once (a turn for answers still waiting for their
            // write or fsync would only cost a wake-up).
            let (mut applied_in_a_row, mut any_ready) = (0, false);
            // True once an answer of this burst waits for an fsync that the answerer runs on
            // this thread: the burst is then applied whole before the answerer's turn, so that
            // one fsync covers all of it.
            let mut holds_a_sync = false;
            // Apply every complete frame already received, in order.
            loop {
                if *self.shutdown.borrow() {
                    return Ok(());
                }
                // Splits the frame off the read buffer without copying: the request's records
                // are slices of it.
                let decoded = split_request_frame(&mut self.inbuf)
                    .map_err(|error| Stop::Failed(SessionError::Framing(error)))?;
                let (value, used) = match decoded {
                    Decoded::Complete { value, used } => (value, used),
                    Decoded::Incomplete { need } => {
                        missing_bytes = need;
                        break;
                    }
                };
                frame_started = None;
                let received = Stamp::now();
                metrics::counter!(m::BYTES_IN).increment(used as u64);
                if !self.in_flight.begin() {
                    // Evicted while idle, just as this request came: it is not applied, as if
                    // the close had come first.
                    return Ok(());
                }
                let reply = match value {
                    Ok(request) => {
                        if !matches!(request.body, RequestBody::Produce(_)) {
                            self.wait_for_earlier_writes().await;
                        }
                        handlers::apply(self.shared, &self.shutdown, request, received).await
                    }
                    Err(error) => {
                        let api = error.api_key.map_or("unknown", |k| k.name());
                        handlers::error(api, error.correlation_id, error.error_code())
                    }
                };
                holds_a_sync |= matches!(&reply, Reply::Append(append) if append.may_block());
                any_ready |= reply.is_ready();
                self.queue(reply).await?;
                applied_in_a_row += 1;
                if applied_in_a_row >= MAX_FRAMES_APPLIED_IN_A_ROW
                    && any_ready
                    && !holds_a_sync
                    && !self.inbuf.is_empty()
                {
                    // More of a pipelined burst is waiting: let the answerer write what is
                    // ready first (this task runs both halves, so it must yield for that).
                    (applied_in_a_row, any_ready) = (0, false);
                    tokio::task::yield_now().await;
                }
            }
            // Nothing complete is left: wait for more bytes. The idle timer runs only while
            // nothing is in flight (an answer waiting for a slow fsync is not idleness).
            let deadline = if self.inbuf.is_empty() {
                Instant::now() + Duration::from_millis(idle_ms)
            } else {
                *frame_started.get_or_insert_with(Instant::now) + Duration::from_millis(frame_ms)
            };
            // The rest of the frame in progress, or one chunk, per read — never all the room the
            // buffer has: after a large frame is split off its spare capacity can be megabytes,
            // and a read that filled it would hold that much of the following frames while this
            // session waits for room in a writer queue. So a session holds its frame and less
            // than one chunk beyond it. (`missing_bytes` is at most a frame: the frame check
            // refused a longer length.)
            let read_limit = READ_CHUNK_BYTES.max(missing_bytes);
            self.inbuf.reserve(read_limit);
            let mut chunk = (&mut self.inbuf).limit(read_limit);
            let read = tokio::select! {
                _ = self.shutdown.wait_for(|&stop| stop) => return Ok(()),
                () = self.slot.evicted() => return Ok(()),
                read = tokio::time::timeout_at(deadline, self.reader.read_buf(&mut chunk)) => read,
            };
            match read {
                Err(_) if self.inbuf.is_empty() && self.in_flight.any() => {}
                Err(_) if self.inbuf.is_empty() => {
                    return Err(Stop::Failed(SessionError::IdleTimeout(idle_ms)));
                }
                Err(_) => return Err(Stop::Failed(SessionError::FrameTimeout(frame_ms))),
                // A clean close between frames, or a half-close after the last request: every
                // complete request is applied, and the answerer writes their answers.
                Ok(Ok(0)) if self.inbuf.is_empty() => return Ok(()),
                Ok(Ok(0)) => {
                    return Err(Stop::Failed(SessionError::TruncatedFrame {
                        have: self.inbuf.len(),
                    }));
                }
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(Stop::Failed(SessionError::Io(e))),
            }
        }
    }

    /// A read (FETCH, METADATA) sees every earlier WRITTEN and FORCED PRODUCE of the connection:
    /// it waits until they are written — not for any fsync.
    async fn wait_for_earlier_writes(&mut self) {
        for written in self.unwritten.drain(..) {
            written.wait().await;
        }
    }

    /// Puts `reply` in the answer queue, waiting for room (in answers and in bytes).
    async fn queue(&mut self, reply: Reply) -> Result<(), Stop> {
        let mut reply = reply;
        match &mut reply {
            Reply::Nothing => {
                self.in_flight.end(1);
                return Ok(());
            }
            Reply::Append(pending) => {
                if let Some(written) = pending.written.take() {
                    self.unwritten.retain_mut(|w| !w.is_done());
                    self.unwritten.push(written);
                }
            }
            _ => {}
        }
        let bytes = reply.queued_bytes().min(MAX_WAITING_ANSWER_BYTES) as u32;
        let permit = Arc::clone(&self.answer_bytes)
            .acquire_many_owned(bytes)
            .await
            .expect("the answer budget is never closed");
        self.answers
            .send(Queued {
                reply,
                _bytes: permit,
            })
            .await
            .map_err(|_| Stop::AnswererGone)
    }
}

/// Why the applier stops.
enum Stop {
    /// The answerer is gone (a write failed, or an answer closed the connection).
    AnswererGone,
    /// Close after the answers already queued.
    Failed(SessionError),
}

/// The writing half: answers in request order, each when ready.
struct Answerer<'a> {
    writer: WriteHalf<'a>,
    shared: &'a Shared,
    in_flight: &'a InFlight<'a>,
    queued: mpsc::Receiver<Queued>,
    outbuf: BytesMut,
    /// Answers in `outbuf`, not yet written.
    gathered: usize,
    /// Heap FETCH mode: the payload buffer, reused across FETCHes so each one costs a `pread`
    /// and a `write`, not an allocation and a memset as well. Kept between FETCHes only up to
    /// [`MAX_KEPT_HEAP_FETCH_BUFFER_BYTES`]; a larger one is freed after its write. In zero-copy
    /// mode only a cold FETCH (bytes not in the page cache) uses one, freed after its write.
    heap_fetch_buf: Vec<u8>,
    /// The hop probe: (answer known, frame decoded) of each PRODUCE answer in `outbuf`.
    stamps: Vec<(Stamp, Stamp)>,
    /// The hop probe: when each FETCH answer gathered in `outbuf` was cut.
    fetch_stamps: Vec<Stamp>,
}

impl Answerer<'_> {
    async fn run(mut self) -> Result<(), SessionError> {
        loop {
            let next = if let Ok(next) = self.queued.try_recv() {
                Some(next)
            } else {
                // Nothing ready to gather: write what is gathered before waiting.
                self.flush().await?;
                self.queued.recv().await
            };
            let Some(Queued { reply, _bytes }) = next else {
                // The applier is done and everything it queued is written.
                return Ok(());
            };
            match reply {
                Reply::Frame(frame) => self.gather(&frame).await?,
                Reply::Append(pending) => {
                    // An inline FORCED batch syncs on this thread when resolved: nothing written
                    // waits for that.
                    if pending.may_block() {
                        self.flush().await?;
                    }
                    let received = pending.received;
                    let resolve = pending.resolve();
                    tokio::pin!(resolve);
                    // Earlier answers must not wait for this one's write or fsync.
                    let resolved = tokio::select! {
                        biased;
                        resolved = &mut resolve => resolved,
                        () = std::future::ready(()) => {
                            self.flush().await?;
                            resolve.await
                        }
                    };
                    match resolved {
                        Reply::Frame(frame) => {
                            if probe::ENABLED {
                                self.stamps.push((Stamp::now(), received));
                            }
                            self.gather(&frame).await?;
                        }
                        Reply::Close(error) => return self.close(error).await,
                        other => {
                            unreachable!("an append resolves to a frame or a close: {other:?}")
                        }
                    }
                }
                Reply::Fetch(fetch) => self.send_fetch(fetch).await?,
                Reply::Close(error) => return self.close(error).await,
                Reply::Nothing => self.in_flight.end(1),
            }
        }
    }

    /// Writes the answers before a close, then reports why it closes.
    async fn close(&mut self, error: SessionError) -> Result<(), SessionError> {
        self.flush().await?;
        Err(error)
    }

    async fn gather(&mut self, frame: &[u8]) -> Result<(), SessionError> {
        self.outbuf.extend_from_slice(frame);
        self.gathered += 1;
        if self.outbuf.len() >= FLUSH_THRESHOLD_BYTES {
            self.flush().await?;
        }
        Ok(())
    }

    /// Writes every gathered answer; they are then done.
    async fn flush(&mut self) -> Result<(), SessionError> {
        self.write_out().await?;
        self.in_flight.end(std::mem::take(&mut self.gathered));
        Ok(())
    }

    async fn write_out(&mut self) -> Result<(), SessionError> {
        if self.outbuf.is_empty() {
            return Ok(());
        }
        let len = self.outbuf.len();
        let ms = self.shared.config.write_timeout_ms;
        within(ms, self.writer.write_all(&self.outbuf)).await?;
        self.outbuf.clear();
        for (known, received) in self.stamps.drain(..) {
            known.hop("b7 session: answer known -> written to the socket");
            received.hop("b0 broker total: PRODUCE frame decoded -> answer written");
        }
        for cut in self.fetch_stamps.drain(..) {
            cut.hop("f2 FETCH reply cut -> payload written to the socket");
        }
        metrics::counter!(m::BYTES_OUT).increment(len as u64);
        metrics::counter!(m::ANSWER_WRITES).increment(1);
        Ok(())
    }

    /// A small FETCH answer whose bytes the page cache holds, gathered whole (header and
    /// payload) with the other answers: one `preadv2` without waiting (`RWF_NOWAIT`) straight
    /// behind the header, and no write of its own. False, with nothing gathered, when the bytes
    /// are not all cached (or the filesystem cannot tell): the general path then sends them.
    ///
    /// Why: a follower's FETCH answer is a few records. Sent as a header write and a
    /// `sendfile`, after a cache probe, it costs three system calls and reaches the client as
    /// two segments, often two reads and two wake-ups there; gathered, it costs one read here
    /// and shares the write of whatever else is ready.
    fn gather_cached_fetch(
        &mut self,
        header: &[u8],
        slice: &crate::storage::ReadSlice,
    ) -> Result<bool, SessionError> {
        let start = self.outbuf.len();
        self.outbuf.extend_from_slice(header);
        let at = self.outbuf.len();
        self.outbuf.resize(at + slice.len() as usize, 0);
        match slice.read_cached_to(&mut self.outbuf[at..]) {
            Ok(Some(read)) if read == slice.len() as usize => {
                self.gathered += 1;
                Ok(true)
            }
            Ok(_) => {
                self.outbuf.truncate(start);
                Ok(false)
            }
            Err(error) => {
                self.outbuf.truncate(start);
                Err(error.into())
            }
        }
    }

    /// The header goes first; the slice keeps the segment pinned until the last byte is sent.
    async fn send_fetch(&mut self, fetch: FetchReply) -> Result<(), SessionError> {
        let FetchReply {
            header,
            partition,
            slice,
            cut,
        } = fetch;
        let len = slice.len() as usize;
        if len == 0 {
            return self.gather(&header).await;
        }
        if len <= INLINE_FETCH_MAX_BYTES && self.gather_cached_fetch(&header, &slice)? {
            if probe::ENABLED {
                self.fetch_stamps.push(cut);
            }
            if self.outbuf.len() >= FLUSH_THRESHOLD_BYTES {
                self.flush().await?;
            }
            return Ok(());
        }
        // A runtime thread must not sleep on the disk: the sessions it serves would all wait.
        // Bytes in the page cache (a follower's, a recent replay's) are sent from here; bytes
        // that are not go through the dispatcher first.
        let zero_copy = self.shared.config.fetch_mode == FetchMode::ZeroCopy;
        let mut buf = std::mem::take(&mut self.heap_fetch_buf);
        let mut slice = Some(slice);
        match fetch::residency(slice.as_ref().expect("just set"), zero_copy, &mut buf)? {
            Residency::SendFile => {}
            Residency::InBuffer => slice = None,
            Residency::Cold { cached } => {
                // Earlier answers do not wait for the disk.
                self.flush().await?;
                let cold = slice.take().expect("just set");
                buf = fetch::read_cold(&self.shared.cold_reads, &partition, cold, buf, cached)
                    .await?;
            }
        }
        self.outbuf.extend_from_slice(&header);
        self.gathered += 1;
        self.write_out().await?;
        let ms = self.shared.config.write_timeout_ms;
        if let Some(slice) = slice {
            let sent = send_file(self.writer.as_ref(), slice.file(), slice.position(), len);
            within(ms, sent).await?;
        } else {
            within(ms, self.writer.write_all(&buf[..len])).await?;
            // Zero-copy sessions keep no buffer between FETCHes: their cold reads are rare,
            // and a buffer kept in each would add up to a megabyte per connection.
            if !zero_copy && buf.len() <= MAX_KEPT_HEAP_FETCH_BUFFER_BYTES {
                self.heap_fetch_buf = buf;
            }
        }
        metrics::counter!(m::BYTES_OUT).increment(len as u64);
        self.in_flight.end(std::mem::take(&mut self.gathered));
        cut.hop("f2 FETCH reply cut -> payload written to the socket");
        Ok(())
    }
}

/// Runs a socket write under `write_timeout_ms`.
async fn within(
    ms: u64,
    write: impl Future<Output = std::io::Result<()>>,
) -> Result<(), SessionError> {
    match tokio::time::timeout(Duration::from_millis(ms), write).await {
        Ok(result) => Ok(result?),
        Err(_) => Err(SessionError::WriteTimeout(ms)),
    }
}
