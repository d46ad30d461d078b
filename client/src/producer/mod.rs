//! [`Producer`]: batches records per partition and sends them, with backpressure.
//!
//! ```text
//! send(key, value) ─► partition (FNV-1a or round-robin) ─► buffer permit (waits when full)
//!                  ─► producer task: per-partition batch ─► ready (size | linger | flush)
//!                  ─► submitted in order on the producer's connection ─► answer
//!                  ─► each record's Delivery resolves: Some(offset), None (ack NONE), or Err
//! ```
//!
//! * Refusals that need no broker reach the caller from `send` itself: an empty record
//!   ([`ClientError::EmptyRecord`]), a partition the topic does not have
//!   ([`ClientError::UnknownPartition`]), a record too large for any frame
//!   ([`ClientError::RequestTooLarge`]).
//! * Refusals by the broker (`RECORD_TOO_LARGE`, `UNKNOWN_TOPIC_OR_PARTITION`, …) arrive through
//!   the [`Delivery`] as [`ClientError::Broker`] — for every record of the refused batch, since
//!   the broker refuses batches whole.
//! * Per-key order: records of one partition go into batches in `send` order, and the batches of
//!   one partition are submitted in order on one connection, which the broker serves in order.
//!
//! Submodules: [`config`], `accumulator` (batch rules), `delivery` (per-record futures),
//! `task` (the background task).

mod accumulator;
pub mod config;
mod delivery;
mod task;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use booblik_protocol::{MAX_FRAME_BYTES, REQUEST_HEADER_BYTES, TopicName};
use bytes::Bytes;
use tokio::sync::{Semaphore, mpsc, oneshot};

pub use config::{MAX_BATCH_BYTES, ProducerConfig};
pub use delivery::{Delivery, DeliveryResult};

use crate::client::Client;
use crate::error::ClientError;
use crate::producer::delivery::Ticket;
use crate::producer::task::{Command, ProducerTask};
use crate::topic::Topic;

/// A batching producer for one topic. Cheap to clone; clones share batches and buffer.
///
/// When the last clone is dropped, the producer's task sends whatever is still batched and
/// settles every delivery before it ends. Call [`Producer::flush`] to wait for that.
#[derive(Clone)]
pub struct Producer {
    inner: Arc<Inner>,
}

struct Inner {
    topic: Topic,
    config: ProducerConfig,
    commands: mpsc::Sender<Command>,
    buffer: Arc<Semaphore>,
    closed: AtomicBool,
}

impl fmt::Debug for Producer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Producer")
            .field("topic", self.inner.topic.name())
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Producer {
    pub(crate) async fn start(
        client: Client,
        topic: &str,
        config: ProducerConfig,
    ) -> Result<Self, ClientError> {
        config.validate()?;
        let topic = client.topic(topic).await?;
        let connection = client.open_connection().await?;
        let (commands, queue) = mpsc::channel(config.command_queue_depth);
        let task = ProducerTask::new(client, topic.name().clone(), connection, &config);
        tokio::spawn(task.run(queue));
        Ok(Self {
            inner: Arc::new(Inner {
                buffer: Arc::new(Semaphore::new(config.buffer_bytes)),
                topic,
                config,
                commands,
                closed: AtomicBool::new(false),
            }),
        })
    }

    /// The topic, as METADATA described it when the producer started.
    pub fn topic(&self) -> &Topic {
        &self.inner.topic
    }

    /// The configuration.
    pub fn config(&self) -> &ProducerConfig {
        &self.inner.config
    }

    /// Sends `value`, to the partition of `key` (FNV-1a, shared by every booblik client) or,
    /// without a key, to the next partition round-robin. Waits while the buffer is full. The
    /// returned [`Delivery`] resolves to the record's offset (`None` under `ack = NONE`).
    pub async fn send(
        &self,
        key: Option<&[u8]>,
        value: impl Into<Bytes>,
    ) -> Result<Delivery, ClientError> {
        let topic = &self.inner.topic;
        let partition = match key {
            Some(key) => topic.partition_for(key),
            None => topic.next_partition(),
        };
        self.enqueue(partition, value.into()).await
    }

    /// Sends `value` to `partition`, which must exist.
    pub async fn send_to(
        &self,
        partition: i32,
        value: impl Into<Bytes>,
    ) -> Result<Delivery, ClientError> {
        let topic = &self.inner.topic;
        if topic.partition(partition).is_none() {
            return Err(ClientError::UnknownPartition {
                topic: topic.name().clone(),
                partition,
                partition_count: topic.partitions().len(),
            });
        }
        self.enqueue(partition, value.into()).await
    }

    /// Sends every batched record now and waits until every record sent before this call is
    /// settled (its [`Delivery`] resolved).
    pub async fn flush(&self) -> Result<(), ClientError> {
        let (done, flushed) = oneshot::channel();
        self.inner
            .commands
            .send(Command::Flush { done })
            .await
            .map_err(|_| ClientError::ProducerClosed)?;
        flushed.await.map_err(|_| ClientError::ProducerClosed)
    }

    /// Flushes, then refuses further records (on every clone) with
    /// [`ClientError::ProducerClosed`].
    pub async fn close(&self) -> Result<(), ClientError> {
        self.inner.closed.store(true, Ordering::Release);
        let flushed = self.flush().await;
        self.inner.buffer.close();
        flushed
    }

    async fn enqueue(&self, partition: i32, payload: Bytes) -> Result<Delivery, ClientError> {
        if payload.is_empty() {
            return Err(ClientError::EmptyRecord);
        }
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(ClientError::ProducerClosed);
        }
        let record_wire_bytes = 4 + payload.len();
        let frame_bytes = produce_frame_bytes(self.inner.topic.name(), record_wire_bytes);
        if frame_bytes > MAX_FRAME_BYTES {
            return Err(ClientError::RequestTooLarge {
                size: frame_bytes,
                max: MAX_FRAME_BYTES,
            });
        }
        // A record larger than the whole buffer takes all of it rather than waiting forever.
        let permits = record_wire_bytes.min(self.inner.config.buffer_bytes) as u32;
        let buffer = Arc::clone(&self.inner.buffer)
            .acquire_many_owned(permits)
            .await
            .map_err(|_| ClientError::ProducerClosed)?;
        let (outcome, delivery) = oneshot::channel();
        self.inner
            .commands
            .send(Command::Append {
                partition,
                payload,
                ticket: Ticket::new(outcome, buffer),
            })
            .await
            .map_err(|_| ClientError::ProducerClosed)?;
        Ok(Delivery::new(partition, delivery))
    }
}

/// Bytes after the length prefix of a PRODUCE to `topic` carrying `records_wire_bytes` of
/// records: header, `u16 nameLen`, name, `int32 partition`, `int8 ackPolicy`,
/// `int32 recordCount`, records.
fn produce_frame_bytes(topic: &TopicName, records_wire_bytes: usize) -> usize {
    REQUEST_HEADER_BYTES + 2 + topic.as_str().len() + 4 + 1 + 4 + records_wire_bytes
}
