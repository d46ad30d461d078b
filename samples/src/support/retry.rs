//! Which failures a long-running sample waits out, and which stop it.
//!
//! The client sorts its errors into groups (see `booblik_client::error`). For a consumer the rule
//! that falls out is short:
//!
//! * **the connection is gone** (broker restarting, network blip, timeout): wait
//!   [`RETRY_BACKOFF_MS`] and ask again *from the same position*. The client reopens the
//!   connection on the next call, and a consumer's position only moves after a batch arrived, so
//!   retrying neither skips nor repeats a record the broker still has. A `docker compose restart
//!   broker` should not kill the consumers. (One case retrying cannot see: after a crash of the
//!   broker's *machine*, records it served before their fsync may be gone and their offsets
//!   reused by new records, which the consumer then skips — see "The limit" in
//!   `samples/README.md`.)
//! * **anything else** — the broker refused (`OFFSET_OUT_OF_RANGE` after retention passed the
//!   position, an unknown topic), or the data is wrong (CRC mismatch) — will be the same on the
//!   next try. Retrying would hide it in a loop of warnings; the sample stops and says why.

use std::time::Duration;

use booblik_client::{Client, ClientError, ConnectionConfig};

use crate::engine::EngineError;

use crate::support::shutdown::Shutdown;

/// Wait between two attempts after a transient failure.
pub const RETRY_BACKOFF_MS: u64 = 500;

/// How long the event samples keep trying a broker that is not reachable yet
/// ([`CommonArgs::connect`](crate::support::cli::CommonArgs::connect)).
pub const CONNECT_PATIENCE_MS: u64 = 30_000;

/// True for failures that a later attempt on a new connection may not repeat.
pub fn is_transient(error: &ClientError) -> bool {
    matches!(
        error,
        ClientError::Connect { .. } | ClientError::ConnectTimeout { .. }
    ) || error.is_connection_lost()
}

/// Sleeps [`RETRY_BACKOFF_MS`], or less if `shutdown` is triggered meanwhile. Returns `false` when
/// the caller should stop instead of retrying.
pub async fn backoff(shutdown: &Shutdown) -> bool {
    tokio::select! {
        () = shutdown.triggered() => false,
        () = tokio::time::sleep(Duration::from_millis(RETRY_BACKOFF_MS)) => true,
    }
}

/// Connects to `addr`, retrying transient failures for up to `patience_ms`: a sample started
/// together with its broker (docker compose, the demo) may be up first. Gives up at once when
/// `shutdown` is triggered.
pub async fn connect(
    addr: &str,
    patience_ms: u64,
    shutdown: &Shutdown,
) -> Result<Client, ClientError> {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(patience_ms);
    loop {
        match Client::connect(addr, ConnectionConfig::default()).await {
            Ok(client) => return Ok(client),
            Err(error) if is_transient(&error) && tokio::time::Instant::now() < deadline => {
                tracing::warn!(broker = addr, %error, "broker not reachable yet; retrying");
                if !backoff(shutdown).await {
                    return Err(error);
                }
            }
            Err(error) => return Err(error),
        }
    }
}

/// Runs `call` until it succeeds, fails for good, or has failed transiently `max_attempts` times
/// in a row, [`RETRY_BACKOFF_MS`] apart: the rule above for one engine call (a read is safe to
/// repeat from the same position). `what` names the call in the warnings.
pub async fn retry_transient<T, F, Fut>(
    what: &str,
    max_attempts: u32,
    mut call: F,
) -> Result<T, EngineError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, EngineError>>,
{
    let mut attempts = 0;
    loop {
        match call().await {
            Err(error) if error.is_transient() && attempts + 1 < max_attempts => {
                attempts += 1;
                tracing::warn!(what, %error, attempts, "failed; retrying");
                tokio::time::sleep(Duration::from_millis(RETRY_BACKOFF_MS)).await;
            }
            outcome => return outcome,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use booblik_client::ErrorCode;

    #[test]
    fn a_lost_connection_is_transient_and_a_refusal_is_not() {
        let lost = ClientError::ConnectionClosed {
            reason: "broker restarted".into(),
        };
        let refused = ClientError::Broker {
            code: ErrorCode::OffsetOutOfRange,
            request: "FETCH events/0".into(),
        };
        assert!(is_transient(&lost));
        assert!(!is_transient(&refused));
    }
}
