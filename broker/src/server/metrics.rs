//! Metric names and the Prometheus exporter.
//!
//! Metrics go through the `metrics` facade; the binary installs a Prometheus exporter when
//! `--metrics-bind` is given. Embedded brokers (tests, the demo) record into whatever recorder
//! the host installed, or nowhere.

use std::net::SocketAddr;

/// Counter: TCP connections accepted (including those refused by the limit).
pub const CONNECTIONS_ACCEPTED: &str = "booblik_connections_accepted_total";
/// Counter: connections closed at once because `max_connections` were open and none was idle.
pub const CONNECTIONS_REJECTED: &str = "booblik_connections_rejected_total";
/// Counter: idle connections closed to admit a new one at the `max_connections` limit.
pub const CONNECTIONS_EVICTED: &str = "booblik_connections_evicted_total";
/// Gauge: connections open now.
pub const CONNECTIONS_OPEN: &str = "booblik_connections_open";
/// Counter: connections closed, for any reason.
pub const CONNECTIONS_CLOSED: &str = "booblik_connections_closed_total";
/// Counter, label `cause`: sessions that ended because of an error (see the warn log for the
/// last cause in full).
pub const SESSION_FAILURES: &str = "booblik_session_failures_total";
/// Counter, label `api`: requests served.
pub const REQUESTS: &str = "booblik_requests_total";
/// Counter, labels `api`, `code`: error responses sent.
pub const ERRORS: &str = "booblik_errors_total";
/// Counter: request bytes read from sockets.
pub const BYTES_IN: &str = "booblik_bytes_in_total";
/// Counter: response bytes written to sockets (FETCH payloads included).
pub const BYTES_OUT: &str = "booblik_bytes_out_total";
/// Counter: writes of gathered answers to sockets (a FETCH payload sent on its own not
/// counted). Requests served over this is how many answers a write carries.
pub const ANSWER_WRITES: &str = "booblik_answer_writes_total";
/// Counter: FETCH v2 requests that waited for data.
pub const FETCH_WAITS: &str = "booblik_fetch_waits_total";
/// Histogram: seconds a FETCH v2 waited.
pub const FETCH_WAIT_SECONDS: &str = "booblik_fetch_wait_seconds";
/// Counter: reads that went to the blocking pool because the page cache did not hold their
/// bytes — a FETCH's record lookup (the long poll's included) or its payload (`docs/broker.md`
/// § Cold reads).
pub const FETCH_COLD_READS: &str = "booblik_fetch_cold_reads_total";

/// Installs the global Prometheus recorder with an HTTP listener serving `/metrics` on `bind`.
/// Must run inside a tokio runtime.
pub fn install_prometheus(bind: SocketAddr) -> Result<(), String> {
    metrics_exporter_prometheus::PrometheusBuilder::new()
        .with_http_listener(bind)
        .install()
        .map_err(|e| format!("cannot start the metrics endpoint on {bind}: {e}"))
}
