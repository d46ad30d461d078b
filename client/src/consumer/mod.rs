//! Consumers: a position in one partition, and two ways to move it.
//!
//! The position belongs to the consumer — the broker keeps none — so a [`Consumer`] is just a
//! topic, a partition, an offset and a connection of its own. From it:
//!
//! * [`Consumer::replay`] reads history: up to the high watermark seen when the replay starts,
//!   then ends ([`Replay::next_batch`] returns `Ok(None)`).
//! * [`Consumer::follow`] never ends: FETCH v2 long polls wait at the broker (`max_wait_ms`)
//!   for new records instead of asking again and again ([`Follow::next_batch`] returns only
//!   non-empty batches).
//!
//! Both give [`Batch`]es of whole, CRC-verified records (rules in [`batch`]), advance the
//! position to each batch's `next_offset`, and never skip a record: on an error the position
//! stays where it was. The API is an async `next_batch()`; `into_stream()` adapts either to a
//! `futures::Stream` that yields the first error and then ends.

pub mod batch;
pub mod config;
mod follow;
mod replay;
mod source;

use std::fmt;

use booblik_protocol::{FetchRequest, LongPoll, TopicName};

pub use batch::{Batch, Record};
pub use config::{ConsumerConfig, StartPosition};
pub use follow::Follow;
pub use replay::Replay;
pub use source::BatchSource;

use crate::connection::{Connection, Redial};
use crate::error::ClientError;
use crate::topic::Topic;

/// A position in one partition, with a connection of its own.
pub struct Consumer {
    /// The consumer's own connection, reopened when it broke (a FETCH is safe to repeat).
    redial: Redial,
    topic: TopicName,
    partition: i32,
    position: i64,
    config: ConsumerConfig,
}

impl fmt::Debug for Consumer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Consumer")
            .field("topic", &self.topic)
            .field("partition", &self.partition)
            .field("position", &self.position)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Consumer {
    /// Resolves `start` with the METADATA in `handle` (which also shows the partition exists)
    /// and opens the consumer's connection through `redial`. `config` was validated by the
    /// caller.
    pub(crate) async fn start(
        handle: &Topic,
        partition: i32,
        start: StartPosition,
        config: ConsumerConfig,
        redial: Redial,
    ) -> Result<Self, ClientError> {
        let Some(metadata) = handle.partition(partition) else {
            return Err(ClientError::UnknownPartition {
                topic: handle.name().clone(),
                partition,
                partition_count: handle.partitions().len(),
            });
        };
        let position = match start {
            StartPosition::Earliest => metadata.log_start_offset,
            StartPosition::Latest => metadata.high_watermark,
            StartPosition::At(offset) if offset < 0 => {
                return Err(ClientError::InvalidConfig(format!(
                    "start offset {offset} is negative"
                )));
            }
            StartPosition::At(offset) => offset,
        };
        redial.connection().await?;
        Ok(Self {
            redial,
            topic: handle.name().clone(),
            partition,
            position,
            config,
        })
    }

    /// Connections this consumer has opened, the first one included. It reopens its connection
    /// by itself when it broke (a FETCH is safe to repeat), so a reader that must know when it
    /// may be talking to a *restarted* broker — to check that the log behind its position is
    /// still the one it read — watches this number grow.
    pub fn connections_opened(&self) -> u64 {
        self.redial.connections_opened()
    }

    /// The topic.
    pub fn topic(&self) -> &TopicName {
        &self.topic
    }

    /// The partition.
    pub fn partition(&self) -> i32 {
        self.partition
    }

    /// The next offset this consumer will read.
    pub fn position(&self) -> i64 {
        self.position
    }

    /// Moves the position (forwards or back).
    pub fn seek(&mut self, offset: i64) {
        self.position = offset;
    }

    /// The fetch settings.
    pub fn config(&self) -> &ConsumerConfig {
        &self.config
    }

    /// One FETCH at the position (v2 with the configured long poll when `long_poll`, else v1),
    /// checked into a [`Batch`]. Advances the position to the batch's `next_offset`.
    pub async fn fetch_batch(&mut self, long_poll: bool) -> Result<Batch, ClientError> {
        let batch = self.fetch_at_position(long_poll).await?;
        self.position = batch.next_offset;
        Ok(batch)
    }

    /// Reads history up to the current high watermark (one METADATA call to learn it).
    pub async fn replay(self) -> Result<Replay, ClientError> {
        Replay::start(self).await
    }

    /// Follows the partition forever with long polls.
    pub fn follow(self) -> Follow {
        Follow::new(self)
    }

    /// The position does not move here; callers decide.
    async fn fetch_at_position(&mut self, long_poll: bool) -> Result<Batch, ClientError> {
        let request = FetchRequest {
            topic: self.topic.clone(),
            partition: self.partition,
            fetch_offset: self.position,
            max_bytes: self.config.max_bytes,
            long_poll: long_poll.then_some(LongPoll {
                max_wait_ms: self.config.max_wait_ms,
                min_bytes: self.config.min_bytes,
            }),
        };
        let response = self.connection().await?.fetch(request).await?;
        Batch::from_fetch(
            &self.topic,
            self.partition,
            self.position,
            self.config.max_bytes,
            response,
        )
    }

    /// The consumer's connection, reopened if it broke (FETCH is safe to repeat).
    async fn connection(&self) -> Result<Connection, ClientError> {
        self.redial.connection().await
    }
}
