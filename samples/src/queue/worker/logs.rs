//! Reading both logs in full, for the verifier and the load harness.
//!
//! Each log is replayed from its first record to the high watermark seen when the replay starts
//! (`Consumer::replay`), so the result is a consistent prefix of each partition. The two prefixes
//! are taken one after the other: records appended in between may appear in the claims prefix
//! without their tasks, which the verifier would report (`ClaimForUnknownTask`). Read the logs
//! of a quiet queue, or tasks first (as here) so that every claimed task is in the tasks prefix.

use anyhow::Context;
use booblik_client::{Client, ConsumerConfig, StartPosition};
use bytes::Bytes;

use crate::queue::record::{ClaimsRecord, Task};

/// Both logs as raw records `(offset, bytes)`: tasks first, then claims. Use this with
/// [`verify_encoded`](crate::queue::verify::verify_encoded) to have undecodable records reported
/// as violations rather than failing the read.
pub async fn read_raw_logs(
    client: &Client,
    tasks_topic: &str,
    claims_topic: &str,
) -> anyhow::Result<(Vec<(i64, Bytes)>, Vec<(i64, Bytes)>)> {
    let tasks = read_partition(client, tasks_topic).await?;
    let claims = read_partition(client, claims_topic).await?;
    Ok((tasks, claims))
}

/// Both logs, decoded: tasks first, then claims. Fails on the first undecodable record (naming
/// its offset).
pub async fn read_logs(
    client: &Client,
    tasks_topic: &str,
    claims_topic: &str,
) -> anyhow::Result<(Vec<(i64, Task)>, Vec<(i64, ClaimsRecord)>)> {
    let (raw_tasks, raw_claims) = read_raw_logs(client, tasks_topic, claims_topic).await?;
    let tasks = raw_tasks
        .into_iter()
        .map(|(offset, bytes)| {
            Task::decode(&bytes)
                .map(|task| (offset, task))
                .with_context(|| format!("{tasks_topic} offset {offset} is not a task record"))
        })
        .collect::<anyhow::Result<_>>()?;
    let claims = raw_claims
        .into_iter()
        .map(|(offset, bytes)| {
            ClaimsRecord::decode(&bytes)
                .map(|record| (offset, record))
                .with_context(|| format!("{claims_topic} offset {offset} is not a claims record"))
        })
        .collect::<anyhow::Result<_>>()?;
    Ok((tasks, claims))
}

async fn read_partition(client: &Client, topic: &str) -> anyhow::Result<Vec<(i64, Bytes)>> {
    let consumer = client
        .consumer(topic, 0, StartPosition::Earliest, ConsumerConfig::default())
        .await
        .with_context(|| format!("cannot read {topic}"))?;
    let start = consumer.position();
    if start > 0 {
        tracing::warn!(
            topic,
            log_start_offset = start,
            "the log does not start at 0 (retention): verdicts over a truncated claims log differ from the workers'"
        );
    }
    let mut replay = consumer.replay().await?;
    let mut records = Vec::new();
    while let Some(batch) = replay.next_batch().await? {
        records.extend(
            batch
                .records
                .into_iter()
                .map(|record| (record.offset, record.payload)),
        );
    }
    Ok(records)
}
