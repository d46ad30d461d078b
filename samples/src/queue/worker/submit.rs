//! Enqueueing work: append a [`Task`] record to the tasks partition, on any engine.
//!
//! A task's identity is a fresh UUID, not its offset: claims name tasks by id. Submitting is one
//! append; concurrent calls on one [`PartitionLog`] are pipelined (booblik: on the partition's
//! connection; JetStream: publishes before their acknowledgements).

use std::sync::Arc;

use anyhow::Context;
use bytes::Bytes;
use uuid::Uuid;

use crate::engine::{Ack, IntoEngine, LogEngine, PartitionLog};
use crate::queue::record::Task;
use crate::support::clock::wall_clock_ms;

/// Appends a task with `payload` (and `submitted_at_ms` = now) to partition 0 of `tasks_topic`,
/// acknowledged FORCED: once this returns, the task survives a broker crash (on JetStream: it is
/// stored by the stream's quorum). Returns the new task's id and offset.
///
/// Opens the partition for this one task: to submit many, open it once
/// ([`open_tasks_log`]) and call [`submit_task_to`].
pub async fn submit_task(
    engine: impl IntoEngine,
    tasks_topic: &str,
    payload: Vec<u8>,
) -> anyhow::Result<(Uuid, i64)> {
    let engine = engine.into_engine();
    let log = open_tasks_log(engine.as_ref(), tasks_topic).await?;
    submit_task_to(log.as_ref(), payload, Ack::Forced).await
}

/// Opens partition 0 of `tasks_topic`, the queue's tasks log.
pub async fn open_tasks_log(
    engine: &dyn LogEngine,
    tasks_topic: &str,
) -> anyhow::Result<Arc<dyn PartitionLog>> {
    engine
        .open(tasks_topic, 0)
        .await
        .with_context(|| format!("cannot open the tasks topic {tasks_topic}"))
}

/// Appends a task with `payload` to `tasks` at `ack` (`Written` is faster and may lose the task
/// in a booblik machine crash). Returns the new task's id and offset.
pub async fn submit_task_to(
    tasks: &dyn PartitionLog,
    payload: Vec<u8>,
    ack: Ack,
) -> anyhow::Result<(Uuid, i64)> {
    let task = Task {
        task_id: Uuid::new_v4(),
        payload,
        submitted_at_ms: wall_clock_ms(),
    };
    let appended = tasks
        .append(&[Bytes::from(task.encode())], ack)
        .await
        .with_context(|| format!("cannot submit a task to {}", tasks.name()))?;
    let offset = appended
        .first()
        .context("an acknowledged append of one task returned no offset")?;
    Ok((task.task_id, offset))
}
