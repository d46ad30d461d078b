//! [`Connection`]: one pipelined TCP connection to a broker.
//!
//! ```text
//!  callers (any task)                 writer task                 reader task
//!  ───────────────────                ───────────                 ───────────
//!  encode request, take id ──► bounded channel ──► push to pending FIFO
//!  (atomic counter)            (request_queue_      then write to socket ──► broker
//!                               depth)              (in-flight permit)          │
//!                                                                               ▼
//!  caller's oneshot ◄──────────────────────── pop FIFO head, compare id ◄── frame
//! ```
//!
//! * One task writes the socket's write half (`writer`) — except that a caller finding that
//!   task with nothing in hand writes its request itself, under a lock, in order (`writer`,
//!   § Writing through): a lone request then costs no task hand-off.
//! * The broker answers in request order, so pending requests form a FIFO whose head must carry
//!   the answer's correlationId (`pending`). A mismatch closes the connection and every
//!   pending request fails with [`ClientError::CorrelationMismatch`] naming both ids.
//! * `ack = NONE` PRODUCE gets no answer: the call completes once its bytes are flushed to the
//!   socket, and returns `Ok(None)`.
//! * Any failure closes the connection for good (`shared`); pending requests fail with the
//!   cause, later calls fail fast with [`ClientError::ConnectionClosed`]. Reconnecting is the
//!   owner's decision; owners that want it compose a [`Redial`].
//!
//! Submodules: [`config`] (limits), `correlation` (ids), `pending` (the FIFO), `shared` (the
//! state all three parties share, and how a connection dies), `writer`, [`reader`] (framing,
//! with the FETCH-aware frame limit), [`response`] (typed decoding and [`ResponseFuture`]).

pub mod config;
mod correlation;
pub(crate) mod pending;
pub mod reader;
mod redial;
pub mod response;
mod shared;
pub(crate) mod writer;

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use booblik_protocol::{
    AckPolicy, FetchRequest, LEN_PREFIX_BYTES, MAX_FETCH_WAIT_MS, MAX_FRAME_BYTES, MetadataRequest,
    MetadataResponse, ProduceRequest, ProduceResponse, RecordSet, Request, RequestBody, TopicName,
};
use bytes::BytesMut;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

pub use booblik_protocol::FetchResponse;
pub use config::ConnectionConfig;
pub use reader::MAX_RESPONSE_FRAME_BYTES;
pub use redial::{Dialer, Redial};
pub use response::ResponseFuture;

use crate::connection::correlation::CorrelationIds;
use crate::connection::response::{
    Decoder, RequestLabel, decode_fetch, decode_metadata, decode_produce,
};
use crate::connection::shared::Shared;
use crate::connection::writer::{Gate, Submission, WriteThrough};
use crate::error::ClientError;

/// Largest `maxBytes` a FETCH is sent with; larger values are lowered to it, so every answer
/// from a conforming broker fits one frame ([`booblik_protocol::MAX_FETCH_PAYLOAD_BYTES`]). The
/// reader still accepts [`MAX_RESPONSE_FRAME_BYTES`], to stay interoperable with brokers that
/// answer a full 8 MiB payload.
pub const MAX_FETCH_BYTES: i32 = booblik_protocol::MAX_FETCH_PAYLOAD_BYTES as i32;

/// A far-future deadline for timeouts too long to add to `Instant::now()`.
const FAR_FUTURE: Duration = Duration::from_hours(8760);

/// One pipelined connection. Cheap to clone; clones share the socket. The connection closes
/// when [`Connection::close`] is called, when it fails, or when the last clone is dropped.
#[derive(Clone)]
pub struct Connection {
    handle: Arc<Handle>,
}

struct Handle {
    addr: String,
    config: ConnectionConfig,
    shared: Arc<Shared>,
    submissions: mpsc::Sender<Submission>,
    /// The socket's write half, for writing through when the writer task has nothing in hand.
    gate: Arc<Gate>,
    ids: CorrelationIds,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shared.fail(ClientError::closed(
            "the connection was dropped by its owner",
        ));
    }
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("addr", &self.handle.addr)
            .field("peer", &self.handle.shared.peer)
            .field("closed", &self.handle.shared.closed_reason())
            .finish_non_exhaustive()
    }
}

/// What a FETCH v2 asking to wait `max_wait_ms` adds to the request timeout: the wait, but no
/// more than [`MAX_FETCH_WAIT_MS`], because brokers clamp the wait to it. Unclamped, a
/// `maxWaitMillis` of `i32::MAX` would leave a dead broker unnoticed for 24.8 days.
fn long_poll_extension_ms(max_wait_ms: i32) -> u64 {
    max_wait_ms.clamp(0, MAX_FETCH_WAIT_MS) as u64
}

fn deadline_after(ms: u64) -> Instant {
    let now = Instant::now();
    now.checked_add(Duration::from_millis(ms))
        .unwrap_or(now + FAR_FUTURE)
}

impl Connection {
    /// Connects to `addr` (`host:port`) within `config.connect_timeout_ms` and starts the
    /// writer and reader tasks on the current tokio runtime.
    pub async fn connect(addr: &str, config: ConnectionConfig) -> Result<Self, ClientError> {
        config.validate()?;
        let connect = TcpStream::connect(addr);
        let stream = tokio::time::timeout_at(deadline_after(config.connect_timeout_ms), connect)
            .await
            .map_err(|_| ClientError::ConnectTimeout {
                addr: addr.to_owned(),
                timeout_ms: config.connect_timeout_ms,
            })?
            .map_err(|e| connect_error(addr, e))?;
        stream
            .set_nodelay(config.tcp_nodelay)
            .map_err(|e| connect_error(addr, e))?;
        let peer = stream.peer_addr().map_err(|e| connect_error(addr, e))?;
        let (read, write) = stream.into_split();
        let shared = Arc::new(Shared::new(peer, &config));
        let (submissions, queue) = mpsc::channel(config.request_queue_depth);
        let gate = Arc::new(Gate::new(write));
        tokio::spawn(writer::run(Arc::clone(&shared), queue, Arc::clone(&gate)));
        tokio::spawn(reader::run(
            Arc::clone(&shared),
            read,
            config.read_buffer_bytes,
        ));
        tracing::debug!(addr, %peer, "connected");
        Ok(Self {
            handle: Arc::new(Handle {
                addr: addr.to_owned(),
                config,
                shared,
                submissions,
                gate,
                ids: CorrelationIds::new(),
            }),
        })
    }

    /// The address this connection was opened with.
    pub fn broker_addr(&self) -> &str {
        &self.handle.addr
    }

    /// The broker's socket address.
    pub fn peer_addr(&self) -> SocketAddr {
        self.handle.shared.peer
    }

    /// The limits this connection runs with.
    pub fn config(&self) -> &ConnectionConfig {
        &self.handle.config
    }

    /// True when both handles share one connection (clones of one another).
    pub fn is_same(&self, other: &Connection) -> bool {
        Arc::ptr_eq(&self.handle, &other.handle)
    }

    /// True once the connection has failed or been closed.
    pub fn is_closed(&self) -> bool {
        self.handle.shared.closed_reason().is_some()
    }

    /// Why the connection closed, if it did.
    pub fn close_reason(&self) -> Option<Arc<str>> {
        self.handle.shared.closed_reason()
    }

    /// Closes the connection; pending requests fail with [`ClientError::ConnectionClosed`].
    pub fn close(&self) {
        self.handle.shared.fail(ClientError::closed(
            "the connection was closed by its owner",
        ));
    }

    /// `ack = NONE` PRODUCE requests the broker answered with an error (their callers had
    /// already been told "written"; each is also logged as a warning).
    pub fn none_refusals(&self) -> u64 {
        self.handle.shared.none_refusals()
    }

    /// `ack = NONE` requests forgotten because more than
    /// [`ConnectionConfig::max_unanswered_none_requests`] were outstanding.
    pub fn forgotten_none_requests(&self) -> u64 {
        self.handle.shared.forgotten_none_requests()
    }

    /// Queues a PRODUCE for writing; the returned future resolves to the broker's answer, or to
    /// `None` for `ack = NONE` once the request is written to the socket.
    pub async fn submit_produce(
        &self,
        topic: &TopicName,
        partition: i32,
        ack: AckPolicy,
        records: RecordSet,
    ) -> Result<ResponseFuture<Option<ProduceResponse>>, ClientError> {
        let request = RequestLabel::Produce {
            topic: topic.clone(),
            partition,
        };
        let body = RequestBody::Produce(ProduceRequest {
            topic: topic.clone(),
            partition,
            ack,
            records,
        });
        let decode: Decoder<Option<ProduceResponse>> = decode_produce;
        self.submit(body, ack != AckPolicy::None, 0, request, decode)
            .await
    }

    /// Queues a FETCH. A `max_bytes` above [`MAX_FETCH_BYTES`] is lowered to it (and
    /// `min_bytes` with it). For v2 the request timeout is extended by `max_wait_ms`, up to the
    /// wait brokers clamp it to ([`MAX_FETCH_WAIT_MS`], 60 s).
    pub async fn submit_fetch(
        &self,
        mut request: FetchRequest,
    ) -> Result<ResponseFuture<FetchResponse>, ClientError> {
        if request.max_bytes > MAX_FETCH_BYTES {
            request.max_bytes = MAX_FETCH_BYTES;
        }
        let mut extra_wait_ms = 0;
        if let Some(long_poll) = &mut request.long_poll {
            long_poll.min_bytes = long_poll.min_bytes.min(request.max_bytes);
            extra_wait_ms = long_poll_extension_ms(long_poll.max_wait_ms);
        }
        let description = RequestLabel::Fetch {
            topic: request.topic.clone(),
            partition: request.partition,
            offset: request.fetch_offset,
        };
        let decode: Decoder<FetchResponse> = decode_fetch;
        self.submit(
            RequestBody::Fetch(request),
            true,
            extra_wait_ms,
            description,
            decode,
        )
        .await
    }

    /// Queues a METADATA for `topics` (empty: all topics).
    pub async fn submit_metadata(
        &self,
        topics: &[TopicName],
    ) -> Result<ResponseFuture<MetadataResponse>, ClientError> {
        let description = RequestLabel::Metadata(topics.to_vec());
        let body = RequestBody::Metadata(MetadataRequest {
            topics: topics.to_vec(),
        });
        let decode: Decoder<MetadataResponse> = decode_metadata;
        self.submit(body, true, 0, description, decode).await
    }

    /// PRODUCE `records` to `topic`/`partition`. `Ok(None)` for `ack = NONE` (returns once the
    /// request is written; the broker sends no answer), `Ok(Some(_))` with the batch's base
    /// offset otherwise.
    pub async fn produce(
        &self,
        topic: &TopicName,
        partition: i32,
        ack: AckPolicy,
        records: RecordSet,
    ) -> Result<Option<ProduceResponse>, ClientError> {
        let called = booblik_protocol::probe::Stamp::now();
        let answer = self
            .submit_produce(topic, partition, ack, records)
            .await?
            .wait()
            .await;
        called.hop("c0 client: PRODUCE called -> answer returned");
        if booblik_protocol::probe::ENABLED {
            // One request at a time on the connection (a worker's appender): the last answer
            // the reader handed over is this one.
            let dispatched = *self
                .handle
                .shared
                .last_dispatch
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            dispatched.hop("c2 client: answer frame read -> PRODUCE call returns");
        }
        answer
    }

    /// FETCH (v1 when `request.long_poll` is `None`, v2 otherwise). The payload is raw segment
    /// bytes and may end mid-record; [`Batch::from_fetch`](crate::Batch::from_fetch) turns it
    /// into verified records.
    pub async fn fetch(&self, request: FetchRequest) -> Result<FetchResponse, ClientError> {
        self.submit_fetch(request).await?.wait().await
    }

    /// METADATA for `topics` (empty: all topics). Naming an unknown topic fails the whole
    /// request with `UNKNOWN_TOPIC_OR_PARTITION`.
    pub async fn metadata(&self, topics: &[TopicName]) -> Result<MetadataResponse, ClientError> {
        self.submit_metadata(topics).await?.wait().await
    }

    async fn submit<T>(
        &self,
        body: RequestBody,
        expects_response: bool,
        extra_wait_ms: u64,
        request: RequestLabel,
        decode: Decoder<T>,
    ) -> Result<ResponseFuture<T>, ClientError> {
        let handle = &*self.handle;
        if let Some(reason) = handle.shared.closed_reason() {
            return Err(ClientError::ConnectionClosed { reason });
        }
        let timeout_ms = handle
            .config
            .request_timeout_ms
            .saturating_add(extra_wait_ms);
        let deadline = deadline_after(timeout_ms);
        let correlation_id = handle.ids.next();
        let whole = Request {
            correlation_id,
            body,
        };
        let api = whole.api_key();
        let frame_len = whole.encoded_len();
        if frame_len - LEN_PREFIX_BYTES > MAX_FRAME_BYTES {
            return Err(ClientError::RequestTooLarge {
                size: frame_len - LEN_PREFIX_BYTES,
                max: MAX_FRAME_BYTES,
            });
        }
        // A PRODUCE's records are not copied into the frame: the writer sends them after the
        // head with one vectored write, straight from the batch's buffer.
        let records_len = match &whole.body {
            RequestBody::Produce(produce) => produce.records.wire_bytes().len(),
            _ => 0,
        };
        let mut frame = BytesMut::with_capacity(frame_len - records_len);
        let records = whole.encode_vectored(&mut frame);
        let (reply, receiver) = oneshot::channel();
        let submission = Submission {
            correlation_id,
            api,
            frame: frame.freeze(),
            records,
            expects_response,
            reply,
            submitted: booblik_protocol::probe::Stamp::now(),
        };
        // Straight onto the socket when the writer task has nothing in hand (`writer.rs`,
        // § Writing through); else through its channel, counted so that nobody overtakes it.
        if let WriteThrough::Queue(submission) =
            handle.gate.write_through(&handle.shared, submission)
        {
            // Uncounted again if it is not sent: timed out, closed, or this future dropped.
            let counted = handle.gate.count_queued();
            let sent = tokio::time::timeout_at(deadline, handle.submissions.send(submission)).await;
            if matches!(sent, Ok(Ok(()))) {
                counted.sent();
            }
            match sent {
                // Not on the wire yet: the queue is full, but the connection is not broken.
                Err(_) => {
                    return Err(ClientError::Timeout {
                        api: api.name(),
                        correlation_id,
                        timeout_ms,
                    });
                }
                Ok(Err(_)) => return Err(handle.shared.closed_error()),
                Ok(Ok(())) => {}
            }
        }
        Ok(ResponseFuture {
            reply: receiver,
            deadline,
            timeout_ms,
            correlation_id,
            api,
            shared: Arc::clone(&handle.shared),
            request,
            decode,
        })
    }
}

fn connect_error(addr: &str, error: std::io::Error) -> ClientError {
    ClientError::Connect {
        addr: addr.to_owned(),
        source: Arc::new(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_poll_extends_the_request_timeout_by_at_most_the_brokers_clamp() {
        assert_eq!(long_poll_extension_ms(0), 0);
        assert_eq!(long_poll_extension_ms(500), 500);
        assert_eq!(long_poll_extension_ms(60_000), 60_000);
        assert_eq!(long_poll_extension_ms(60_001), 60_000);
        assert_eq!(long_poll_extension_ms(i32::MAX), 60_000);
        // Negative waits never leave the codec, but must not wrap into a huge extension.
        assert_eq!(long_poll_extension_ms(-1), 0);
        assert_eq!(MAX_FETCH_WAIT_MS, 60_000);
    }
}
