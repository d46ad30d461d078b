//! Checkpointing: resume a consumer from an [`OffsetStore`] and save its position after each
//! processed batch.
//!
//! The order is the whole guarantee. The handler runs first; only when it returns `Ok` is the
//! batch's `next_offset` saved. A crash between the two replays that batch on restart — records
//! are processed **at least once**, never skipped. Saving first would give at-most-once: a crash
//! after the save and before the handler loses the batch silently.
//!
//! One save per batch, not per record: a durable save costs an fsync or two (see
//! `booblik_offset_store`), and larger batches only widen the window that a crash replays.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use booblik_offset_store::{OffsetStore, OffsetStoreError};
use booblik_protocol::TopicName;

use crate::client::Client;
use crate::consumer::{Batch, BatchSource, Consumer, ConsumerConfig, StartPosition};
use crate::error::ClientError;

/// What can stop a checkpointed consumer.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError<E = Infallible> {
    /// Fetching failed.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// Loading or saving the position failed.
    #[error("offset store: {0}")]
    Store(#[from] OffsetStoreError),
    /// The handler failed; the batch's position was not saved, so a restart processes it again.
    #[error("batch handler failed: {0}")]
    Handler(E),
}

/// Loads and saves positions of one named consumer.
#[derive(Clone)]
pub struct Checkpointer {
    store: Arc<dyn OffsetStore>,
    consumer_name: String,
}

impl fmt::Debug for Checkpointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Checkpointer")
            .field("consumer_name", &self.consumer_name)
            .finish_non_exhaustive()
    }
}

impl Checkpointer {
    /// Positions of `consumer_name` in `store`.
    pub fn new(store: Arc<dyn OffsetStore>, consumer_name: impl Into<String>) -> Self {
        Self {
            store,
            consumer_name: consumer_name.into(),
        }
    }

    /// The consumer name positions are saved under.
    pub fn consumer_name(&self) -> &str {
        &self.consumer_name
    }

    /// The saved position, if any.
    pub async fn load(
        &self,
        topic: &TopicName,
        partition: i32,
    ) -> Result<Option<i64>, OffsetStoreError> {
        self.store
            .load(&self.consumer_name, topic.as_str(), partition)
            .await
    }

    /// `At(saved)` when a position was saved, otherwise `fallback`.
    pub async fn start_position(
        &self,
        topic: &TopicName,
        partition: i32,
        fallback: StartPosition,
    ) -> Result<StartPosition, OffsetStoreError> {
        Ok(self
            .load(topic, partition)
            .await?
            .map_or(fallback, StartPosition::At))
    }

    /// A consumer resuming from the saved position (or `fallback` when none was saved).
    pub async fn consumer(
        &self,
        client: &Client,
        topic: &str,
        partition: i32,
        fallback: StartPosition,
        config: ConsumerConfig,
    ) -> Result<Consumer, CheckpointError> {
        let name = TopicName::new(topic).map_err(ClientError::from)?;
        let start = self.start_position(&name, partition, fallback).await?;
        tracing::info!(
            consumer = %self.consumer_name, topic, partition, ?start, "resuming"
        );
        Ok(client.consumer(topic, partition, start, config).await?)
    }

    /// Saves `batch.next_offset`: everything before it has been processed.
    pub async fn commit(&self, batch: &Batch) -> Result<(), OffsetStoreError> {
        self.store
            .save(
                &self.consumer_name,
                batch.topic.as_str(),
                batch.partition,
                batch.next_offset,
            )
            .await
    }

    /// Runs `handler` on `batch`, then saves its `next_offset`. An empty batch changes
    /// nothing and is neither handled nor saved.
    pub async fn process<F, Fut, E>(
        &self,
        batch: Batch,
        handler: F,
    ) -> Result<(), CheckpointError<E>>
    where
        F: FnOnce(Batch) -> Fut,
        Fut: Future<Output = Result<(), E>>,
    {
        if batch.is_empty() {
            return Ok(());
        }
        let topic = batch.topic.clone();
        let partition = batch.partition;
        let next_offset = batch.next_offset;
        handler(batch).await.map_err(CheckpointError::Handler)?;
        self.store
            .save(&self.consumer_name, topic.as_str(), partition, next_offset)
            .await?;
        Ok(())
    }

    /// Handles and checkpoints every batch of `source` until it ends (a replay) or something
    /// fails (a follow only ends that way).
    pub async fn run<S, F, Fut, E>(
        &self,
        source: &mut S,
        mut handler: F,
    ) -> Result<(), CheckpointError<E>>
    where
        S: BatchSource,
        F: FnMut(Batch) -> Fut,
        Fut: Future<Output = Result<(), E>>,
    {
        while let Some(batch) = source.next_source_batch().await? {
            self.process(batch, &mut handler).await?;
        }
        Ok(())
    }
}
