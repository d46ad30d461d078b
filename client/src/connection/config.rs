//! [`ConnectionConfig`]: every limit and wait of one connection, named.
//!
//! A pipelined connection has three places where work can pile up, and each has a bound:
//! the submission queue in front of the writer task (`request_queue_depth`), the requests
//! written but not yet answered (`max_in_flight_requests`), and the `ack = NONE` requests that
//! may still be answered with an error (`max_unanswered_none_requests`). Two waits bound the
//! time a caller can be stuck: `connect_timeout_ms` and `request_timeout_ms`.

use crate::error::ClientError;

/// Default [`ConnectionConfig::connect_timeout_ms`].
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 5_000;
/// Default [`ConnectionConfig::request_timeout_ms`].
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 30_000;
/// Default [`ConnectionConfig::max_in_flight_requests`].
pub const DEFAULT_MAX_IN_FLIGHT_REQUESTS: usize = 256;
/// Default [`ConnectionConfig::request_queue_depth`].
pub const DEFAULT_REQUEST_QUEUE_DEPTH: usize = 1_024;
/// Default [`ConnectionConfig::max_unanswered_none_requests`].
pub const DEFAULT_MAX_UNANSWERED_NONE_REQUESTS: usize = 65_536;
/// Default [`ConnectionConfig::read_buffer_bytes`].
pub const DEFAULT_READ_BUFFER_BYTES: usize = 64 * 1024;

/// Limits and waits of one [`Connection`](crate::Connection).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionConfig {
    /// How long `connect` may take (DNS, TCP handshake) before it fails with
    /// [`ClientError::ConnectTimeout`].
    pub connect_timeout_ms: u64,
    /// How long a request may take from the call to its answer (for `ack = NONE`: to the end of
    /// its write). A FETCH v2 long poll gets its `maxWaitMillis` on top, at most the 60 s
    /// brokers clamp it to. When it passes, the caller gets [`ClientError::Timeout`] and the
    /// connection is closed, because every later answer would be queued behind the missing one.
    pub request_timeout_ms: u64,
    /// Requests written and awaiting an answer. When reached, the writer stops taking
    /// submissions until an answer arrives (backpressure).
    pub max_in_flight_requests: usize,
    /// Submissions waiting for the writer task. When full, callers wait to submit.
    pub request_queue_depth: usize,
    /// `ack = NONE` PRODUCE requests remembered in case the broker answers one with an error
    /// (it does for requests it refuses while decoding or routing, e.g. an unknown partition).
    /// Each is forgotten as soon as a later answer shows it was accepted; past this many the
    /// oldest is forgotten, and an error answer to it would then be a protocol violation.
    pub max_unanswered_none_requests: usize,
    /// Initial capacity of the read buffer; it grows to fit the largest response frame.
    pub read_buffer_bytes: usize,
    /// Disable Nagle's algorithm (requests are small and latency matters).
    pub tcp_nodelay: bool,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        Self {
            connect_timeout_ms: DEFAULT_CONNECT_TIMEOUT_MS,
            request_timeout_ms: DEFAULT_REQUEST_TIMEOUT_MS,
            max_in_flight_requests: DEFAULT_MAX_IN_FLIGHT_REQUESTS,
            request_queue_depth: DEFAULT_REQUEST_QUEUE_DEPTH,
            max_unanswered_none_requests: DEFAULT_MAX_UNANSWERED_NONE_REQUESTS,
            read_buffer_bytes: DEFAULT_READ_BUFFER_BYTES,
            tcp_nodelay: true,
        }
    }
}

impl ConnectionConfig {
    /// Checks that every limit can be honoured.
    pub fn validate(&self) -> Result<(), ClientError> {
        let positive = [
            ("connect_timeout_ms", self.connect_timeout_ms as usize),
            ("request_timeout_ms", self.request_timeout_ms as usize),
            ("max_in_flight_requests", self.max_in_flight_requests),
            ("request_queue_depth", self.request_queue_depth),
            (
                "max_unanswered_none_requests",
                self.max_unanswered_none_requests,
            ),
            ("read_buffer_bytes", self.read_buffer_bytes),
        ];
        for (name, value) in positive {
            if value == 0 {
                return Err(ClientError::InvalidConfig(format!(
                    "ConnectionConfig::{name} must be at least 1"
                )));
            }
        }
        if self.max_in_flight_requests > tokio::sync::Semaphore::MAX_PERMITS {
            return Err(ClientError::InvalidConfig(format!(
                "ConnectionConfig::max_in_flight_requests must be at most {}",
                tokio::sync::Semaphore::MAX_PERMITS
            )));
        }
        Ok(())
    }
}
