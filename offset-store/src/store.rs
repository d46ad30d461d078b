//! The [`OffsetStore`] trait: where a consumer keeps its position between runs.
//!
//! The position belongs to the consumer (the broker keeps none), so whatever the consumer saves
//! here is where it resumes after a restart. The trait is deliberately two calls wide: load the
//! position once at start, save it after each processed batch. It is object-safe (through
//! `async-trait`), so a consumer can hold an `Arc<dyn OffsetStore>` and tests can swap in the
//! [`InMemoryOffsetStore`](crate::InMemoryOffsetStore).

use std::sync::Arc;

use async_trait::async_trait;

use crate::error::OffsetStoreError;

/// Loads and saves one offset per (consumer, topic, partition).
///
/// The offset saved is the **next offset to read** (a batch's `next_offset`), not the last one
/// processed, so a fresh consumer and a resumed one share one rule: start reading at the loaded
/// offset.
///
/// Contract for every implementation:
/// * Keys are checked with [`OffsetKey::new`](crate::OffsetKey::new); an invalid key is
///   [`OffsetStoreError::InvalidKey`] and a negative offset is
///   [`OffsetStoreError::NegativeOffset`], before anything is stored.
/// * `load` returns `Ok(None)` only when nothing was ever saved for the key, and otherwise the
///   value of a completed save, never a guess: damage is an error.
/// * Once `save` returns `Ok`, `load` returns that offset or the offset of a later save, also
///   after a restart for durable stores. Saves for one key take effect in call order (the
///   offset may go backwards if the caller saves a smaller one: seeking back is allowed).
#[async_trait]
pub trait OffsetStore: Send + Sync {
    /// The saved position of `consumer` in `topic`/`partition`, or `None` if none was saved.
    async fn load(
        &self,
        consumer: &str,
        topic: &str,
        partition: i32,
    ) -> Result<Option<i64>, OffsetStoreError>;

    /// Replaces the saved position of `consumer` in `topic`/`partition` with `offset`.
    async fn save(
        &self,
        consumer: &str,
        topic: &str,
        partition: i32,
        offset: i64,
    ) -> Result<(), OffsetStoreError>;
}

/// A shared store is a store: lets callers pass `Arc<FileOffsetStore>` or `Arc<dyn OffsetStore>`
/// wherever an `impl OffsetStore` is expected.
#[async_trait]
impl<T: OffsetStore + ?Sized> OffsetStore for Arc<T> {
    async fn load(
        &self,
        consumer: &str,
        topic: &str,
        partition: i32,
    ) -> Result<Option<i64>, OffsetStoreError> {
        (**self).load(consumer, topic, partition).await
    }

    async fn save(
        &self,
        consumer: &str,
        topic: &str,
        partition: i32,
        offset: i64,
    ) -> Result<(), OffsetStoreError> {
        (**self).save(consumer, topic, partition, offset).await
    }
}

/// An owned boxed store (`Box<dyn OffsetStore>`) is a store too.
#[async_trait]
impl<T: OffsetStore + ?Sized> OffsetStore for Box<T> {
    async fn load(
        &self,
        consumer: &str,
        topic: &str,
        partition: i32,
    ) -> Result<Option<i64>, OffsetStoreError> {
        (**self).load(consumer, topic, partition).await
    }

    async fn save(
        &self,
        consumer: &str,
        topic: &str,
        partition: i32,
        offset: i64,
    ) -> Result<(), OffsetStoreError> {
        (**self).save(consumer, topic, partition, offset).await
    }
}
