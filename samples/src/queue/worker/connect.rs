//! Connecting when the broker may not be up yet (containers start in any order).

use std::time::Duration;

use booblik_client::{Client, ConnectionConfig};

/// How long [`connect_with_retry`] keeps trying by default.
pub const MAX_CONNECT_WAIT_MS: u64 = 60_000;
/// Pause between two connection attempts.
const CONNECT_RETRY_BACKOFF_MS: u64 = 1_000;

/// Connects to `addr`, retrying every second for up to `max_wait_ms`.
pub async fn connect_with_retry(addr: &str, max_wait_ms: u64) -> anyhow::Result<Client> {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(max_wait_ms);
    let mut attempt = 1u32;
    loop {
        match Client::connect(addr, ConnectionConfig::default()).await {
            Ok(client) => return Ok(client),
            Err(error) if tokio::time::Instant::now() < deadline => {
                tracing::info!(addr, attempt, %error, "broker not reachable yet; retrying");
                tokio::time::sleep(Duration::from_millis(CONNECT_RETRY_BACKOFF_MS)).await;
                attempt += 1;
            }
            Err(error) => {
                return Err(anyhow::Error::new(error).context(format!(
                    "cannot connect to the broker at {addr} within {max_wait_ms} ms"
                )));
            }
        }
    }
}
