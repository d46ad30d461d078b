//! What a position belongs to: a consumer name, a topic and a partition.
//!
//! Every store checks a key the same way before doing anything with it, so a key that works
//! against the [`InMemoryOffsetStore`](crate::InMemoryOffsetStore) in a test also works against
//! the [`FileOffsetStore`](crate::FileOffsetStore) in production. The length limits come from the
//! file store (each name becomes one directory name, see [`crate::name_encoding`]), but they are
//! part of the contract for all stores.

use std::fmt;

use crate::error::{KeyProblem, OffsetStoreError};
use crate::name_encoding::{MAX_ENCODED_NAME_BYTES, encoded_len};

/// A validated (consumer, topic, partition) triple.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OffsetKey {
    consumer: String,
    topic: String,
    partition: i32,
}

impl OffsetKey {
    /// Checks the key: consumer and topic non-empty and at most [`MAX_ENCODED_NAME_BYTES`] once
    /// encoded (255 bytes of plain ASCII, fewer if the name needs escaping), partition `>= 0`.
    /// Any character is allowed in either name.
    pub fn new(
        consumer: impl Into<String>,
        topic: impl Into<String>,
        partition: i32,
    ) -> Result<Self, OffsetStoreError> {
        let key = Self {
            consumer: consumer.into(),
            topic: topic.into(),
            partition,
        };
        match key.problem() {
            None => Ok(key),
            Some(problem) => Err(OffsetStoreError::InvalidKey {
                consumer: key.consumer,
                topic: key.topic,
                partition: key.partition,
                problem,
            }),
        }
    }

    fn problem(&self) -> Option<KeyProblem> {
        if self.consumer.is_empty() {
            return Some(KeyProblem::EmptyConsumer);
        }
        if self.topic.is_empty() {
            return Some(KeyProblem::EmptyTopic);
        }
        if self.partition < 0 {
            return Some(KeyProblem::NegativePartition);
        }
        let consumer_bytes = encoded_len(&self.consumer);
        if consumer_bytes > MAX_ENCODED_NAME_BYTES {
            return Some(KeyProblem::ConsumerTooLong {
                encoded_bytes: consumer_bytes,
            });
        }
        let topic_bytes = encoded_len(&self.topic);
        if topic_bytes > MAX_ENCODED_NAME_BYTES {
            return Some(KeyProblem::TopicTooLong {
                encoded_bytes: topic_bytes,
            });
        }
        None
    }

    /// The consumer name, as given.
    pub fn consumer(&self) -> &str {
        &self.consumer
    }

    /// The topic name, as given.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// The partition, `>= 0`.
    pub fn partition(&self) -> i32 {
        self.partition
    }
}

impl fmt::Display for OffsetKey {
    /// `consumer "billing", topic "events", partition 2`: quoted, because names may hold anything.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "consumer {:?}, topic {:?}, partition {}",
            self.consumer, self.topic, self.partition
        )
    }
}

impl fmt::Debug for OffsetKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
