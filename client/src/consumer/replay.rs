//! [`Replay`]: history up to the high watermark seen at the start, then the end.
//!
//! The end is fixed when the replay starts, so a replay of a busy partition still finishes:
//! records appended meanwhile belong to whatever follows (typically a [`Follow`](crate::Follow)
//! from the replay's final position).

use futures::Stream;

use crate::consumer::{Batch, Consumer};
use crate::error::ClientError;
use crate::topic::Topic;

/// Reads a partition from the consumer's position up to a fixed end.
#[derive(Debug)]
pub struct Replay {
    consumer: Consumer,
    end_offset: i64,
}

impl Replay {
    pub(crate) async fn start(consumer: Consumer) -> Result<Self, ClientError> {
        // On the consumer's own connection: the replay needs nothing of the client.
        let connection = consumer.connection().await?;
        let topic = Topic::fetch(&connection, consumer.topic.clone()).await?;
        let end_offset = topic.high_watermark(consumer.partition).ok_or_else(|| {
            ClientError::UnknownPartition {
                topic: consumer.topic.clone(),
                partition: consumer.partition,
                partition_count: topic.partitions().len(),
            }
        })?;
        Ok(Self {
            consumer,
            end_offset,
        })
    }

    /// The high watermark seen at the start: the replay ends there.
    pub fn end_offset(&self) -> i64 {
        self.end_offset
    }

    /// The next offset to read.
    pub fn position(&self) -> i64 {
        self.consumer.position
    }

    /// The next batch (never empty, never past the end), or `None` once the end is reached.
    /// On an error the position stays, and calling again retries.
    pub async fn next_batch(&mut self) -> Result<Option<Batch>, ClientError> {
        if self.consumer.position >= self.end_offset {
            return Ok(None);
        }
        let mut batch = self.consumer.fetch_at_position(false).await?;
        batch.truncate_at(self.end_offset);
        if batch.is_empty() {
            // Below the high watermark there is always a record; an empty answer here would
            // otherwise repeat forever.
            return Err(ClientError::CorruptPayload {
                topic: batch.topic,
                partition: batch.partition,
                offset: self.consumer.position,
                detail: format!(
                    "the broker returned no bytes below the high watermark {}",
                    self.end_offset
                ),
            });
        }
        self.consumer.position = batch.next_offset;
        Ok(Some(batch))
    }

    /// The remaining batches as a stream; it yields the first error and then ends.
    pub fn into_stream(self) -> impl Stream<Item = Result<Batch, ClientError>> + Send {
        futures::stream::unfold(Some(self), |state| async move {
            let mut replay = state?;
            match replay.next_batch().await {
                Ok(Some(batch)) => Some((Ok(batch), Some(replay))),
                Ok(None) => None,
                Err(error) => Some((Err(error), None)),
            }
        })
    }

    /// The consumer, at the replay's position (e.g. to `follow()` from there).
    pub fn into_consumer(self) -> Consumer {
        self.consumer
    }
}
