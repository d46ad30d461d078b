//! Asking the broker how far its logs reach (METADATA), to check that what a workload believes it
//! wrote is really in the log, and to wait for `ack = NONE` records to land.

use std::time::Duration;

use anyhow::bail;
use booblik_client::Client;
use tokio::time::Instant;

/// How often [`wait_for_records`] asks again.
const POLL_INTERVAL: Duration = Duration::from_millis(2);

/// Records currently in `topic`, summed over its partitions (high watermark − log start).
pub async fn records_in_topic(client: &Client, topic: &str) -> anyhow::Result<i64> {
    let topic = client.topic(topic).await?;
    Ok(topic
        .partitions()
        .iter()
        .map(|p| p.high_watermark - p.log_start_offset)
        .sum())
}

/// Waits until `topic` holds at least `target` records; fails after `limit`.
pub async fn wait_for_records(
    client: &Client,
    topic: &str,
    target: i64,
    limit: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + limit;
    loop {
        let now_in_log = records_in_topic(client, topic).await?;
        if now_in_log >= target {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!("{topic} holds {now_in_log} records after {limit:?}, expected {target}");
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}
