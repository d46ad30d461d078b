//! State shared by a connection's handle, its writer task and its reader task, and the one way
//! a connection dies.
//!
//! Whatever breaks a connection — the broker closing the socket, a write error, an answer out
//! of order, a request timeout, the owner dropping it — ends up in [`Shared::fail`]: the pending
//! queue is closed and drained under its lock (so nothing can be pushed after the drain and wait
//! forever), every drained request gets the error, the in-flight semaphore is closed (so a
//! writer waiting for a permit wakes up), and the `closed` signal stops both tasks. Later calls
//! fail fast with the first cause.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{Semaphore, watch};

use crate::connection::config::ConnectionConfig;
use crate::connection::pending::{Matched, Pending, PendingKind, PendingQueue};
use crate::error::ClientError;

#[derive(Debug)]
pub(crate) struct Shared {
    /// The broker's address, for messages.
    pub(crate) peer: SocketAddr,
    /// Permits for requests awaiting an answer.
    pub(crate) in_flight: Arc<Semaphore>,
    pending: Mutex<PendingQueue>,
    closed: watch::Sender<bool>,
    none_refusals: AtomicU64,
    /// The hop probe: when the reader last handed an answer to its caller.
    pub(crate) last_dispatch: Mutex<booblik_protocol::probe::Stamp>,
}

impl Shared {
    pub(crate) fn new(peer: SocketAddr, config: &ConnectionConfig) -> Self {
        Self {
            peer,
            in_flight: Arc::new(Semaphore::new(config.max_in_flight_requests)),
            pending: Mutex::new(PendingQueue::new(config.max_unanswered_none_requests)),
            closed: watch::Sender::new(false),
            none_refusals: AtomicU64::new(0),
            last_dispatch: Mutex::new(booblik_protocol::probe::Stamp::now()),
        }
    }

    fn queue(&self) -> MutexGuard<'_, PendingQueue> {
        // Nothing panics while holding the lock; recover the data if something ever did.
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Why the connection closed, if it did.
    pub(crate) fn closed_reason(&self) -> Option<Arc<str>> {
        self.queue().closed_reason().cloned()
    }

    /// The error for a caller that finds the connection closed.
    pub(crate) fn closed_error(&self) -> ClientError {
        ClientError::closed(
            self.closed_reason()
                .unwrap_or_else(|| Arc::from("the connection's tasks ended")),
        )
    }

    /// A receiver that turns `true` once the connection is closed.
    pub(crate) fn closed_signal(&self) -> watch::Receiver<bool> {
        self.closed.subscribe()
    }

    /// Registers a request about to be written; fails it when the connection is closed.
    pub(crate) fn push(&self, pending: Pending) -> Result<(), ClientError> {
        let result = self.queue().push(pending);
        result.map_err(|(pending, reason)| {
            let error = ClientError::closed(reason);
            if let PendingKind::Answered { reply, .. } = pending.kind {
                let _ = reply.send(Err(error.clone()));
            }
            error
        })
    }

    /// True when no request waits for an answer (or, `ack = NONE`, for its acceptance to be
    /// known): the connection is idle.
    pub(crate) fn nothing_pending(&self) -> bool {
        self.queue().is_empty()
    }

    /// Matches an answer's correlationId (see `pending.rs`).
    pub(crate) fn match_response(&self, correlation_id: i32) -> Matched {
        self.queue().match_response(correlation_id)
    }

    /// Counts an `ack = NONE` request the broker refused.
    pub(crate) fn record_none_refusal(&self) {
        self.none_refusals.fetch_add(1, Ordering::Relaxed);
    }

    /// `ack = NONE` requests the broker refused so far.
    pub(crate) fn none_refusals(&self) -> u64 {
        self.none_refusals.load(Ordering::Relaxed)
    }

    /// `ack = NONE` requests forgotten past `max_unanswered_none_requests`.
    pub(crate) fn forgotten_none_requests(&self) -> u64 {
        self.queue().forgotten_unanswered()
    }

    /// Closes the connection: every pending request gets `error`, later calls fail fast with
    /// its reason. Only the first failure counts.
    #[allow(clippy::needless_pass_by_value)] // taking ownership reads better at every call site
    pub(crate) fn fail(&self, error: ClientError) {
        let reason: Arc<str> = match &error {
            ClientError::ConnectionClosed { reason } => Arc::clone(reason),
            other => Arc::from(other.to_string()),
        };
        let drained = self.queue().close(Arc::clone(&reason));
        let Some(drained) = drained else {
            return;
        };
        tracing::debug!(peer = %self.peer, %reason, pending = drained.len(), "connection closed");
        self.in_flight.close();
        self.closed.send_replace(true);
        for pending in drained {
            if let PendingKind::Answered { reply, .. } = pending.kind {
                let _ = reply.send(Err(error.clone()));
            }
        }
    }
}
