//! [`Producer`]: batches records per partition and sends them, with backpressure.
//!
//! ```text
//! send(key, value) ─► partition (FNV-1a or round-robin) ─► buffer permit (waits when full)
//!                  ─► appended to its partition's open batch (shared accumulator, short mutex)
//!                  ─► batch ready (size | linger | flush) ─► producer task woken
//!                  ─► submitted in order on the producer's connection ─► answer
//!                  ─► the batch's outcome is set once; each record's Delivery reads
//!                     Some(base offset + index), None (ack NONE), or Err
//! ```
//!
//! Everything a record costs on its way in is per-record work that cannot be avoided (a buffer
//! permit, a copy into the batch, a reference to the batch's outcome); everything else — waking
//! the task, the linger timer, the request, the answer, freeing buffer space — happens once per
//! batch. That is what lets one `send` loop produce millions of small records per second.
//!
//! * Refusals that need no broker reach the caller from `send` itself: an empty record
//!   ([`ClientError::EmptyRecord`]), a partition the topic does not have
//!   ([`ClientError::UnknownPartition`]), a record larger than any FETCH can return
//!   ([`ClientError::RecordTooLarge`], above `MAX_RECORD_PAYLOAD_BYTES`), a record too large
//!   for a frame with this topic's name ([`ClientError::RequestTooLarge`]).
//! * Refusals by the broker (`RECORD_TOO_LARGE`, `UNKNOWN_TOPIC_OR_PARTITION`, …) arrive through
//!   the [`Delivery`] as [`ClientError::Broker`] — for every record of the refused batch, since
//!   the broker refuses batches whole.
//! * Per-key order: records of one partition go into batches in `send` order, and the batches of
//!   one partition are submitted in order on one connection, which the broker serves in order.
//!
//! Submodules: [`config`], `accumulator` (batch rules), `delivery` (per-batch outcomes,
//! per-record futures), `task` (the shared state and the background task).

mod accumulator;
pub mod config;
mod delivery;
mod task;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use booblik_protocol::{
    MAX_FRAME_BYTES, MAX_RECORD_PAYLOAD_BYTES, REQUEST_HEADER_BYTES, TopicName,
};
use bytes::Bytes;
use tokio::sync::{TryAcquireError, mpsc, oneshot};
use tokio::time::Instant;

pub use config::{MAX_BATCH_BYTES, ProducerConfig};
pub use delivery::{Delivery, DeliveryResult};

use crate::connection::Redial;
use crate::error::ClientError;
use crate::producer::task::{Command, ProducerTask, Shared};
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
    shared: Arc<Shared>,
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
    /// Starts the producer's task, which sends on `redial`'s connections. `config` was
    /// validated by the caller.
    pub(crate) fn start(topic: Topic, redial: Redial, config: ProducerConfig) -> Self {
        let (commands, queue) = mpsc::channel(config.command_queue_depth);
        let shared = Arc::new(Shared::new(&config));
        let task = ProducerTask::new(topic.name().clone(), redial, Arc::clone(&shared), &config);
        tokio::spawn(task.run(queue));
        Self {
            inner: Arc::new(Inner {
                shared,
                topic,
                config,
                commands,
                closed: AtomicBool::new(false),
            }),
        }
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
        self.inner.shared.buffer.close();
        flushed
    }

    async fn enqueue(&self, partition: i32, payload: Bytes) -> Result<Delivery, ClientError> {
        if payload.is_empty() {
            return Err(ClientError::EmptyRecord);
        }
        // A larger record would be accepted by a PRODUCE frame to a short topic name, and then
        // no FETCH could ever return it: refuse it here rather than poison the partition.
        if payload.len() > MAX_RECORD_PAYLOAD_BYTES {
            return Err(ClientError::RecordTooLarge {
                size: payload.len(),
                max: MAX_RECORD_PAYLOAD_BYTES,
            });
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
        let buffer = &self.inner.shared.buffer;
        // The permits are given back per batch, when it is settled (`task::settle`), so they
        // are forgotten here rather than carried by each record. `try_acquire` first: the
        // common case needs no future and no cooperative-scheduling budget.
        match buffer.try_acquire_many(permits) {
            Ok(permit) => permit.forget(),
            Err(TryAcquireError::NoPermits) => buffer
                .acquire_many(permits)
                .await
                .map_err(|_| ClientError::ProducerClosed)?
                .forget(),
            Err(TryAcquireError::Closed) => return Err(ClientError::ProducerClosed),
        }
        let appended = self.inner.shared.batches().append(
            partition,
            &payload,
            Instant::now,
            |batch, index| batch.add_record(partition, index, permits),
        );
        if appended.wake_task {
            self.inner.shared.wake.notify_one();
        }
        Ok(appended.attached)
    }
}

/// Bytes after the length prefix of a PRODUCE to `topic` carrying `records_wire_bytes` of
/// records: header, `u16 nameLen`, name, `int32 partition`, `int8 ackPolicy`,
/// `int32 recordCount`, records.
fn produce_frame_bytes(topic: &TopicName, records_wire_bytes: usize) -> usize {
    REQUEST_HEADER_BYTES + 2 + topic.as_str().len() + 4 + 1 + 4 + records_wire_bytes
}
