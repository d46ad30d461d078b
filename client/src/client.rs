//! [`Client`]: the entry point. Knows the broker's address, keeps one shared connection for
//! small requests, and opens dedicated connections for producers and consumers.
//!
//! Why dedicated connections: a broker serves the requests of one connection one at a time, in
//! order. A consumer's long-poll FETCH may hold its connection for `max_wait_ms`, and a FORCED
//! PRODUCE for an fsync; on a shared connection every METADATA behind them would wait too. So
//! each [`Producer`] and each [`Consumer`] gets its own connection, and the shared one serves
//! METADATA and low-level calls.
//!
//! A broken shared connection is replaced on the next [`Client::connection`] call. Requests
//! that were pending on it are not retried: a PRODUCE may have been applied before the break.

use std::fmt;
use std::sync::Arc;

use booblik_protocol::{ErrorCode, MetadataResponse, TopicName};
use tokio::sync::Mutex;

use crate::connection::{Connection, ConnectionConfig};
use crate::consumer::{Consumer, ConsumerConfig, StartPosition};
use crate::error::ClientError;
use crate::producer::{Producer, ProducerConfig};
use crate::topic::Topic;

/// A handle on one broker. Cheap to clone; clones share the shared connection.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    addr: String,
    config: ConnectionConfig,
    shared: Mutex<Connection>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("addr", &self.inner.addr)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Connects to the broker at `addr` (`host:port`). Fails fast when it is unreachable.
    pub async fn connect(
        addr: impl Into<String>,
        config: ConnectionConfig,
    ) -> Result<Self, ClientError> {
        let addr = addr.into();
        let connection = Connection::connect(&addr, config.clone()).await?;
        Ok(Self {
            inner: Arc::new(Inner {
                addr,
                config,
                shared: Mutex::new(connection),
            }),
        })
    }

    /// The broker address this client was created with.
    pub fn broker_addr(&self) -> &str {
        &self.inner.addr
    }

    /// The configuration every connection of this client uses.
    pub fn connection_config(&self) -> &ConnectionConfig {
        &self.inner.config
    }

    /// The shared connection, reconnected first if it has closed.
    pub async fn connection(&self) -> Result<Connection, ClientError> {
        let mut shared = self.inner.shared.lock().await;
        if let Some(reason) = shared.close_reason() {
            tracing::info!(addr = %self.inner.addr, %reason, "reconnecting the shared connection");
            *shared = self.open_connection().await?;
        }
        Ok(shared.clone())
    }

    /// A new connection of its own, for work that should not queue behind others.
    pub async fn open_connection(&self) -> Result<Connection, ClientError> {
        Connection::connect(&self.inner.addr, self.inner.config.clone()).await
    }

    /// METADATA for `topics` (empty: every topic) on the shared connection.
    pub async fn metadata(&self, topics: &[TopicName]) -> Result<MetadataResponse, ClientError> {
        self.connection().await?.metadata(topics).await
    }

    /// The partitions and offsets of one topic.
    pub async fn topic(&self, name: &str) -> Result<Topic, ClientError> {
        let name = TopicName::new(name)?;
        let metadata = self.metadata(std::slice::from_ref(&name)).await?;
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
        Ok(Topic::from_metadata(entry))
    }

    /// A batching producer for `topic`, on a connection of its own.
    pub async fn producer(
        &self,
        topic: &str,
        config: ProducerConfig,
    ) -> Result<Producer, ClientError> {
        Producer::start(self.clone(), topic, config).await
    }

    /// A consumer of `topic`/`partition` starting at `start`, on a connection of its own.
    pub async fn consumer(
        &self,
        topic: &str,
        partition: i32,
        start: StartPosition,
        config: ConsumerConfig,
    ) -> Result<Consumer, ClientError> {
        Consumer::start(self.clone(), topic, partition, start, config).await
    }
}
