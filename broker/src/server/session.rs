//! One client connection.
//!
//! A connection is pipelined: the client may send many requests without waiting. We serve them
//! one at a time, in arrival order, so responses leave strictly in request order without any
//! reordering machinery. Responses to consecutive requests are gathered in one buffer and
//! written together before the session waits for anything (more bytes, a long poll, a
//! `sendfile`), so pipelining costs one write per burst, not one per request.
//!
//! Error rules (SPEC §2): a frame length out of `1..=MAX_FRAME_BYTES` closes the connection with
//! no answer, because framing is lost; every other problem is answered with an error code and the
//! connection stays open. Only a frame shorter than the request header is answered with
//! correlationId 0 (there is no id to echo).
//!
//! Bounds per connection: the input buffer holds at most one frame plus one read
//! ([`READ_CHUNK_BYTES`]); responses are flushed once [`FLUSH_THRESHOLD_BYTES`] gather; a frame
//! must arrive within `frame_read_timeout_ms`, a write must finish within `write_timeout_ms`,
//! and an idle connection is closed after `idle_timeout_ms`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use booblik_protocol::{Decoded, WireError, encode_error_response, split_request_frame};
use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::{debug, warn};

use super::Shared;
use super::metrics as m;
use crate::storage::StorageError;

/// Bytes asked of the socket per read.
pub(crate) const READ_CHUNK_BYTES: usize = 64 * 1024;
/// Gathered responses are written once they reach this size.
pub(crate) const FLUSH_THRESHOLD_BYTES: usize = 64 * 1024;
/// Largest heap FETCH buffer a session keeps between FETCHes (heap mode). Larger payloads (up to
/// 8 MiB) get a buffer that is freed after its write, so idle connections that once fetched a lot
/// do not hold `max_connections` × 8 MiB.
pub(crate) const MAX_KEPT_HEAP_FETCH_BUFFER_BYTES: usize = 1024 * 1024;

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

pub(crate) struct Session {
    pub(super) stream: TcpStream,
    pub(super) shared: Arc<Shared>,
    pub(super) shutdown: watch::Receiver<bool>,
    inbuf: BytesMut,
    pub(super) outbuf: BytesMut,
    /// Heap FETCH mode: the payload buffer, reused across FETCHes so each one costs a `pread`
    /// and a `write`, not an allocation and a memset as well. Kept between FETCHes only up to
    /// [`MAX_KEPT_HEAP_FETCH_BUFFER_BYTES`]; a larger one is freed after its write. In zero-copy
    /// mode only a cold FETCH (bytes not in the page cache) uses one, freed after its write.
    pub(super) heap_fetch_buf: Vec<u8>,
}

pub(crate) async fn run(
    stream: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
    shutdown: watch::Receiver<bool>,
) {
    metrics::gauge!(m::CONNECTIONS_OPEN).increment(1.0);
    // Responses are small and latency-bound (claims, acks): do not let Nagle hold them.
    let _ = stream.set_nodelay(true);
    debug!(%peer, "connection opened");
    let mut session = Session {
        stream,
        shared,
        shutdown,
        inbuf: BytesMut::with_capacity(READ_CHUNK_BYTES),
        outbuf: BytesMut::with_capacity(FLUSH_THRESHOLD_BYTES),
        heap_fetch_buf: Vec::new(),
    };
    match session.serve().await {
        Ok(()) => debug!(%peer, "connection closed"),
        Err(error) => {
            metrics::counter!(m::SESSION_FAILURES, "cause" => error.cause()).increment(1);
            warn!(%peer, cause = error.cause(), %error, "session ended by an error");
        }
    }
    metrics::gauge!(m::CONNECTIONS_OPEN).decrement(1.0);
    metrics::counter!(m::CONNECTIONS_CLOSED).increment(1);
}

impl Session {
    async fn serve(&mut self) -> Result<(), SessionError> {
        let config = &self.shared.config;
        let (idle_ms, frame_ms) = (config.idle_timeout_ms, config.frame_read_timeout_ms);
        // When the first byte of a still-incomplete frame arrived (slow-loris guard).
        let mut frame_started: Option<Instant> = None;
        loop {
            // Serve every complete frame already received, in order.
            loop {
                if *self.shutdown.borrow() {
                    return self.flush().await;
                }
                let decoded = match split_request_frame(&mut self.inbuf) {
                    Ok(decoded) => decoded,
                    Err(error) => {
                        // Answer what came before, then drop the connection unanswered.
                        self.flush().await?;
                        return Err(SessionError::Framing(error));
                    }
                };
                match decoded {
                    Decoded::Incomplete { .. } => break,
                    Decoded::Complete { value, used } => {
                        frame_started = None;
                        metrics::counter!(m::BYTES_IN).increment(used as u64);
                        match value {
                            Ok(request) => self.handle(request).await?,
                            Err(error) => {
                                let api = error.api_key.map_or("unknown", |k| k.name());
                                self.answer_error(api, error.correlation_id, error.error_code());
                            }
                        }
                        if self.outbuf.len() >= FLUSH_THRESHOLD_BYTES {
                            self.flush().await?;
                        }
                    }
                }
            }
            // Nothing complete is left: send what we have, then wait for more bytes.
            self.flush().await?;
            let deadline = if self.inbuf.is_empty() {
                Instant::now() + Duration::from_millis(idle_ms)
            } else {
                *frame_started.get_or_insert_with(Instant::now) + Duration::from_millis(frame_ms)
            };
            self.inbuf.reserve(READ_CHUNK_BYTES);
            let read = tokio::select! {
                _ = self.shutdown.wait_for(|&stop| stop) => return Ok(()),
                read = tokio::time::timeout_at(deadline, self.stream.read_buf(&mut self.inbuf)) => read,
            };
            match read {
                Err(_) if self.inbuf.is_empty() => return Err(SessionError::IdleTimeout(idle_ms)),
                Err(_) => return Err(SessionError::FrameTimeout(frame_ms)),
                // A clean close between frames, or a half-close after the last request: every
                // complete request has been answered above.
                Ok(Ok(0)) if self.inbuf.is_empty() => return Ok(()),
                Ok(Ok(0)) => {
                    return Err(SessionError::TruncatedFrame {
                        have: self.inbuf.len(),
                    });
                }
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(SessionError::Io(e)),
            }
        }
    }

    /// Queues an error response (no body).
    pub(super) fn answer_error(
        &mut self,
        api: &'static str,
        correlation_id: i32,
        code: booblik_protocol::ErrorCode,
    ) {
        metrics::counter!(m::ERRORS, "api" => api, "code" => code.name()).increment(1);
        encode_error_response(correlation_id, code, &mut self.outbuf);
    }

    /// Writes every gathered response.
    pub(super) async fn flush(&mut self) -> Result<(), SessionError> {
        if self.outbuf.is_empty() {
            return Ok(());
        }
        let len = self.outbuf.len();
        self.with_write_timeout(async |s: &mut Self| s.stream.write_all(&s.outbuf).await)
            .await?;
        self.outbuf.clear();
        metrics::counter!(m::BYTES_OUT).increment(len as u64);
        Ok(())
    }

    /// Runs a socket write under `write_timeout_ms`.
    pub(super) async fn with_write_timeout(
        &mut self,
        write: impl AsyncFnOnce(&mut Self) -> std::io::Result<()>,
    ) -> Result<(), SessionError> {
        let ms = self.shared.config.write_timeout_ms;
        match tokio::time::timeout(Duration::from_millis(ms), write(self)).await {
            Ok(result) => Ok(result?),
            Err(_) => Err(SessionError::WriteTimeout(ms)),
        }
    }
}
