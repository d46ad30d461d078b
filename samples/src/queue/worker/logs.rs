//! Reading both logs in full, for the verifier and the load harness, on any engine.
//!
//! Each log is read from its first record to the end seen when the read starts, so the result is
//! a consistent prefix of each partition. The two prefixes are taken one after the other: records
//! appended in between may appear in the claims prefix without their tasks, which the verifier
//! would report (`ClaimForUnknownTask`). Read the logs of a quiet queue, or tasks first (as here)
//! so that every claimed task is in the tasks prefix.
//!
//! Offsets are the engine's (booblik's from 0, JetStream's stream sequences from 1): the verifier
//! takes them as they are. A failure the engine calls transient (a leader election after a node
//! was lost) is retried from the same offset, up to [`MAX_READ_ATTEMPTS`] times in a row.

use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;

use crate::engine::{EngineError, IntoEngine, LogEngine, MAX_READ_RECORDS, ReadLimits};
use crate::queue::record::{ClaimsRecord, Task};
use crate::support::retry::retry_transient;

/// Transient failures in a row after which reading a log gives up (about 30 s at
/// [`RETRY_BACKOFF_MS`](crate::support::retry::RETRY_BACKOFF_MS), beyond a JetStream leader election's 6–9 s).
pub const MAX_READ_ATTEMPTS: u32 = 60;

/// Both logs as raw records `(offset, bytes)`: tasks first, then claims. Use this with
/// [`verify_encoded`](crate::queue::verify::verify_encoded) to have undecodable records reported
/// as violations rather than failing the read.
pub async fn read_raw_logs(
    engine: impl IntoEngine,
    tasks_topic: &str,
    claims_topic: &str,
) -> anyhow::Result<(Vec<(i64, Bytes)>, Vec<(i64, Bytes)>)> {
    let engine = engine.into_engine();
    let tasks = read_partition(engine.as_ref(), tasks_topic).await?;
    let claims = read_partition(engine.as_ref(), claims_topic).await?;
    Ok((tasks, claims))
}

/// Both logs, decoded: tasks first, then claims. Fails on the first undecodable record (naming
/// its offset).
pub async fn read_logs(
    engine: impl IntoEngine,
    tasks_topic: &str,
    claims_topic: &str,
) -> anyhow::Result<(Vec<(i64, Task)>, Vec<(i64, ClaimsRecord)>)> {
    let (raw_tasks, raw_claims) = read_raw_logs(engine, tasks_topic, claims_topic).await?;
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

async fn read_partition(engine: &dyn LogEngine, topic: &str) -> anyhow::Result<Vec<(i64, Bytes)>> {
    let read = async {
        let log = retry_transient(topic, MAX_READ_ATTEMPTS, || engine.open(topic, 0)).await?;
        let bounds = retry_transient(topic, MAX_READ_ATTEMPTS, || log.bounds()).await?;
        if bounds.start > bounds.origin {
            tracing::warn!(
                topic,
                origin = bounds.origin,
                log_start_offset = bounds.start,
                "the log does not start at its origin (retention): verdicts over a truncated claims log differ from the workers'"
            );
        }
        // What is there, at once: nothing below the end needs waiting for.
        let limits = ReadLimits {
            max_records: MAX_READ_RECORDS,
            wait: Duration::ZERO,
            ..ReadLimits::default()
        };
        let mut records = Vec::new();
        let mut position = bounds.start;
        while position < bounds.end {
            let batch =
                retry_transient(topic, MAX_READ_ATTEMPTS, || log.read(position, limits)).await?;
            if batch.records.is_empty() {
                // The log ends before the end it reported (it cannot shrink): what was read
                // is the prefix there is.
                break;
            }
            records.extend(
                batch
                    .records
                    .into_iter()
                    .filter(|record| record.offset < bounds.end)
                    .map(|record| (record.offset, record.payload)),
            );
            position = batch.next_offset;
        }
        Ok::<_, EngineError>(records)
    };
    read.await.with_context(|| format!("cannot read {topic}"))
}
