//! [`Topic`]: what METADATA said about one topic, and how to pick its partitions.
//!
//! A snapshot: partitions never change while a broker runs (the topic set is fixed at start),
//! but `logStartOffset` and `highWatermark` move; call [`Client::topic`](crate::Client::topic)
//! again for fresh numbers.

use std::sync::Arc;

use booblik_protocol::{ErrorCode, PartitionMetadata, TopicMetadata, TopicName};

use crate::connection::Connection;
use crate::error::ClientError;
use crate::partitioner::Partitioner;

/// One topic as METADATA described it.
#[derive(Debug, Clone)]
pub struct Topic {
    name: TopicName,
    partitions: Arc<[PartitionMetadata]>,
    partitioner: Partitioner,
}

impl Topic {
    /// Asks `connection` for METADATA of `name`. A topic the broker does not know, or one it
    /// lists without partitions, is `UNKNOWN_TOPIC_OR_PARTITION`.
    pub(crate) async fn fetch(
        connection: &Connection,
        name: TopicName,
    ) -> Result<Self, ClientError> {
        let metadata = connection.metadata(std::slice::from_ref(&name)).await?;
        let unknown = || ClientError::Broker {
            code: ErrorCode::UnknownTopicOrPartition,
            request: format!("METADATA {name}"),
        };
        let entry = metadata
            .topics
            .into_iter()
            .find(|t| t.name == name)
            .ok_or_else(unknown)?;
        if entry.partitions.is_empty() {
            return Err(unknown());
        }
        Ok(Self::from_metadata(entry))
    }

    /// Builds the handle from a METADATA entry.
    ///
    /// # Panics
    /// When the entry lists no partition (a broker never reports such a topic).
    pub fn from_metadata(metadata: TopicMetadata) -> Self {
        let ids: Vec<i32> = metadata.partitions.iter().map(|p| p.id).collect();
        Self {
            name: metadata.name,
            partitions: metadata.partitions.into(),
            partitioner: Partitioner::new(ids),
        }
    }

    /// The topic's name.
    pub fn name(&self) -> &TopicName {
        &self.name
    }

    /// Number of partitions.
    pub fn partition_count(&self) -> u32 {
        self.partitioner.partition_count()
    }

    /// Every partition, sorted by id, with its offsets at the time of the METADATA call.
    pub fn partitions(&self) -> &[PartitionMetadata] {
        &self.partitions
    }

    /// One partition, if the topic has it.
    pub fn partition(&self, id: i32) -> Option<&PartitionMetadata> {
        self.partitions.iter().find(|p| p.id == id)
    }

    /// The first offset still in the log of `partition`.
    pub fn log_start_offset(&self, partition: i32) -> Option<i64> {
        self.partition(partition).map(|p| p.log_start_offset)
    }

    /// The offset the next record of `partition` will get.
    pub fn high_watermark(&self, partition: i32) -> Option<i64> {
        self.partition(partition).map(|p| p.high_watermark)
    }

    /// The partition of a keyed record (the shared FNV-1a partitioner).
    pub fn partition_for(&self, key: &[u8]) -> i32 {
        self.partitioner.for_key(key)
    }

    /// The next partition for a keyless record, round-robin (shared by clones of this handle).
    pub fn next_partition(&self) -> i32 {
        self.partitioner.round_robin()
    }

    /// The partitioner behind [`Topic::partition_for`] and [`Topic::next_partition`].
    pub fn partitioner(&self) -> &Partitioner {
        &self.partitioner
    }
}
