//! The booblik engine: a partition is a booblik topic partition, read with FETCH v2 long polls
//! and written with PRODUCE.

use std::sync::Arc;

use async_trait::async_trait;
use booblik_client::{
    AckPolicy, Batch, Client, ClientError, Connection, ErrorCode, Redial, TopicName,
};
use booblik_protocol::{FetchRequest, LongPoll, RecordSetBuilder};
use bytes::Bytes;

use super::{
    Ack, Appended, Bounds, EngineError, EngineKind, LogEngine, LogRecord, PartitionLog,
    PartitionName, ReadBatch, ReadLimits, check_limits,
};

/// The booblik engine over one [`Client`].
#[derive(Debug, Clone)]
pub struct BooblikEngine {
    client: Client,
}

impl BooblikEngine {
    /// An engine over `client`.
    pub fn new(client: Client) -> Self {
        Self { client }
    }

    /// The client underneath.
    pub fn client(&self) -> &Client {
        &self.client
    }
}

#[async_trait]
impl LogEngine for BooblikEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Booblik
    }

    async fn partition_count(&self, topic: &str) -> Result<i32, EngineError> {
        let whole = PartitionName::whole(topic);
        let handle = self
            .client
            .topic(topic)
            .await
            .map_err(|error| engine_error(&whole, &error))?;
        Ok(handle.partitions().len() as i32)
    }

    async fn open(
        &self,
        topic: &str,
        partition: i32,
    ) -> Result<Arc<dyn PartitionLog>, EngineError> {
        let name = PartitionName {
            topic: topic.to_owned(),
            partition,
        };
        let topic_name = TopicName::new(topic).map_err(|error| EngineError::Refused {
            partition: name.clone(),
            reason: error.to_string(),
        })?;
        let count = self.partition_count(topic).await?;
        if !(0..count).contains(&partition) {
            return Err(EngineError::Unknown(name));
        }
        // Dial both now, so an unreachable broker is reported by `open`, not by the first read.
        let reads = self.client.redial();
        let writes = self.client.redial();
        for redial in [&reads, &writes] {
            redial
                .connection()
                .await
                .map_err(|error| engine_error(&name, &error))?;
        }
        Ok(Arc::new(BooblikPartition {
            topic: topic_name,
            name,
            reads,
            writes,
        }))
    }
}

/// One booblik partition with two connections of its own, each reopened when it breaks by the
/// client's [`Redial`] (which dials without holding a lock, so callers of a broken connection
/// wait for one dial, not for each other's).
///
/// Two, because a booblik session answers one request at a time, in order: a long poll parked
/// at the end of the log would hold back an append sent behind it on the same socket — until
/// the poll's deadline, although the append is what would wake it.
#[derive(Debug)]
struct BooblikPartition {
    topic: TopicName,
    name: PartitionName,
    /// FETCH (long polls).
    reads: Redial,
    /// PRODUCE and METADATA.
    writes: Redial,
}

impl BooblikPartition {
    /// `redial`'s connection, reopened if it was closed.
    async fn connection(&self, redial: &Redial) -> Result<Connection, EngineError> {
        redial
            .connection()
            .await
            .map_err(|error| engine_error(&self.name, &error))
    }
}

#[async_trait]
impl PartitionLog for BooblikPartition {
    fn name(&self) -> &PartitionName {
        &self.name
    }

    async fn append(&self, records: &[Bytes], ack: Ack) -> Result<Appended, EngineError> {
        let mut builder = RecordSetBuilder::new();
        for record in records {
            builder.push(record).map_err(|error| EngineError::Refused {
                partition: self.name.clone(),
                reason: error.to_string(),
            })?;
        }
        let set = builder.finish().map_err(|error| EngineError::Refused {
            partition: self.name.clone(),
            reason: error.to_string(),
        })?;
        let policy = match ack {
            Ack::Written => AckPolicy::Written,
            Ack::Forced => AckPolicy::Forced,
        };
        let answer = self
            .connection(&self.writes)
            .await?
            .produce(&self.topic, self.name.partition, policy, set)
            .await
            .map_err(|error| engine_error(&self.name, &error))?
            .ok_or_else(|| EngineError::Broken {
                partition: self.name.clone(),
                reason: "no answer to an acknowledged PRODUCE".into(),
            })?;
        let base = answer.base_offset;
        Ok(Appended {
            offsets: (0..records.len() as i64).map(|n| base + n).collect(),
        })
    }

    async fn read(&self, from: i64, limits: ReadLimits) -> Result<ReadBatch, EngineError> {
        check_limits(&self.name, limits)?;
        let max_bytes = i32::try_from(
            limits
                .max_bytes
                .min(booblik_client::connection::MAX_FETCH_BYTES as usize),
        )
        .unwrap_or(i32::MAX);
        let wait_ms = limits.wait.as_millis() as i32;
        let request = FetchRequest {
            topic: self.topic.clone(),
            partition: self.name.partition,
            fetch_offset: from,
            max_bytes,
            long_poll: (wait_ms > 0).then_some(LongPoll {
                max_wait_ms: wait_ms,
                min_bytes: 1,
            }),
        };
        let response = self.connection(&self.reads).await?.fetch(request).await;
        let response = match response {
            Ok(response) => response,
            Err(error) if error.broker_code() == Some(ErrorCode::OffsetOutOfRange) => {
                let bounds = self.bounds().await?;
                return Err(EngineError::OutOfRange {
                    partition: self.name.clone(),
                    offset: from,
                    start: bounds.start,
                    end: bounds.end,
                });
            }
            Err(error) => return Err(engine_error(&self.name, &error)),
        };
        let batch = Batch::from_fetch(&self.topic, self.name.partition, from, max_bytes, response)
            .map_err(|error| engine_error(&self.name, &error))?;
        let records = batch
            .records
            .into_iter()
            .take(limits.max_records)
            .map(|record| LogRecord {
                offset: record.offset,
                payload: record.payload,
            })
            .collect::<Vec<_>>();
        let next_offset = records.last().map_or(from, |record| record.offset + 1);
        Ok(ReadBatch {
            records,
            next_offset,
            end: batch.high_watermark.max(next_offset),
        })
    }

    async fn bounds(&self) -> Result<Bounds, EngineError> {
        let metadata = self
            .connection(&self.writes)
            .await?
            .metadata(std::slice::from_ref(&self.topic))
            .await
            .map_err(|error| engine_error(&self.name, &error))?;
        let partition = metadata
            .topics
            .iter()
            .find(|topic| topic.name == self.topic)
            .and_then(|topic| {
                topic
                    .partitions
                    .iter()
                    .find(|partition| partition.id == self.name.partition)
            })
            .ok_or_else(|| EngineError::Unknown(self.name.clone()))?;
        Ok(Bounds {
            origin: 0,
            start: partition.log_start_offset,
            end: partition.high_watermark,
        })
    }

    fn reconnects(&self) -> u64 {
        // Each was opened once by `open`; every connection after that is a reconnect.
        (self.reads.connections_opened() + self.writes.connections_opened()).saturating_sub(2)
    }
}

/// Sorts a client error into the engine's kinds.
fn engine_error(name: &PartitionName, error: &ClientError) -> EngineError {
    let transient = crate::support::retry::is_transient(error);
    match error.broker_code() {
        Some(ErrorCode::UnknownTopicOrPartition) => EngineError::Unknown(name.clone()),
        Some(_) => EngineError::Refused {
            partition: name.clone(),
            reason: error.to_string(),
        },
        None if transient => EngineError::Unavailable {
            partition: name.clone(),
            reason: error.to_string(),
        },
        None => EngineError::Broken {
            partition: name.clone(),
            reason: error.to_string(),
        },
    }
}
