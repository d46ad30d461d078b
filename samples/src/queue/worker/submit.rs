//! Enqueueing work: append a [`Task`] record to the tasks partition.
//!
//! A task's identity is a fresh UUID, not its offset: claims name tasks by id. Submitting is one
//! PRODUCE on the client's shared connection; concurrent calls are pipelined by the connection.

use anyhow::Context;
use booblik_client::{AckPolicy, Client};
use booblik_protocol::{RecordSet, TopicName};
use uuid::Uuid;

use crate::queue::record::Task;
use crate::support::clock::wall_clock_ms;

/// Appends a task with `payload` (and `submitted_at_ms` = now) to partition 0 of `tasks_topic`,
/// acknowledged FORCED: once this returns, the task survives a broker crash. Returns the new
/// task's id and offset.
pub async fn submit_task(
    client: &Client,
    tasks_topic: &str,
    payload: Vec<u8>,
) -> anyhow::Result<(Uuid, i64)> {
    submit_task_with_ack(client, tasks_topic, payload, AckPolicy::Forced).await
}

/// [`submit_task`] with an ack policy of your choice (`WRITTEN` is faster and may lose the
/// task in a broker crash; `NONE` is refused because it returns no offset).
pub async fn submit_task_with_ack(
    client: &Client,
    tasks_topic: &str,
    payload: Vec<u8>,
    ack: AckPolicy,
) -> anyhow::Result<(Uuid, i64)> {
    anyhow::ensure!(
        ack != AckPolicy::None,
        "ack NONE returns no offset; submit with FORCED or WRITTEN"
    );
    let topic = TopicName::new(tasks_topic)?;
    let task = Task {
        task_id: Uuid::new_v4(),
        payload,
        submitted_at_ms: wall_clock_ms(),
    };
    let records = RecordSet::from_payloads([task.encode()])?;
    let response = client
        .connection()
        .await?
        .produce(&topic, 0, ack, records)
        .await
        .with_context(|| format!("cannot submit a task to {topic}"))?
        .context("the broker answered nothing to an acknowledged PRODUCE")?;
    Ok((task.task_id, response.base_offset))
}
