//! [`Client`]: the entry point. Knows the broker's address, keeps one shared connection for
//! small requests, and opens dedicated connections for producers and consumers.
//!
//! Why dedicated connections: a broker serves the requests of one connection one at a time, in
//! order. A consumer's long-poll FETCH may hold its connection for `max_wait_ms`, and a FORCED
//! PRODUCE for an fsync; on a shared connection every METADATA behind them would wait too. So
//! each [`Producer`] and each [`Consumer`] gets its own connection, and the shared one serves
//! METADATA and low-level calls.
//!
//! A broken shared connection is replaced on the next [`Client::connection`] call (a
//! [`Redial`]: no lock is held while it connects). Requests that were pending on it are not
//! retried: a PRODUCE may have been applied before the break.
//!
//! This module depends on the producer and consumer modules (it builds them), never the other
//! way round: they are given a [`Topic`] and a [`Redial`] of their own.

use std::fmt;
use std::sync::Arc;

use booblik_protocol::{MetadataResponse, TopicName};

use crate::connection::{Connection, ConnectionConfig, Redial};
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
    shared: Redial,
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
        let shared = Redial::connect(addr.clone(), config.clone()).await?;
        Ok(Self {
            inner: Arc::new(Inner {
                addr,
                config,
                shared,
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
        self.inner.shared.connection().await
    }

    /// A new connection of its own, for work that should not queue behind others.
    pub async fn open_connection(&self) -> Result<Connection, ClientError> {
        Connection::connect(&self.inner.addr, self.inner.config.clone()).await
    }

    /// A [`Redial`] of its own to this client's broker, with this client's configuration: a
    /// dedicated connection that is reopened on demand when it broke. Opens nothing yet.
    pub fn redial(&self) -> Redial {
        Redial::new(self.inner.addr.clone(), self.inner.config.clone())
    }

    /// METADATA for `topics` (empty: every topic) on the shared connection.
    pub async fn metadata(&self, topics: &[TopicName]) -> Result<MetadataResponse, ClientError> {
        self.connection().await?.metadata(topics).await
    }

    /// The partitions and offsets of one topic.
    pub async fn topic(&self, name: &str) -> Result<Topic, ClientError> {
        let name = TopicName::new(name)?;
        Topic::fetch(&self.connection().await?, name).await
    }

    /// A batching producer for `topic`, on a connection of its own.
    pub async fn producer(
        &self,
        topic: &str,
        config: ProducerConfig,
    ) -> Result<Producer, ClientError> {
        config.validate()?;
        let topic = self.topic(topic).await?;
        let redial = self.redial();
        redial.connection().await?;
        Ok(Producer::start(topic, redial, config))
    }

    /// A consumer of `topic`/`partition` starting at `start`, on a connection of its own.
    pub async fn consumer(
        &self,
        topic: &str,
        partition: i32,
        start: StartPosition,
        config: ConsumerConfig,
    ) -> Result<Consumer, ClientError> {
        config.validate()?;
        let topic = self.topic(topic).await?;
        Consumer::start(&topic, partition, start, config, self.redial()).await
    }
}
