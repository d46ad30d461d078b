//! [`InMemoryOffsetStore`]: the [`OffsetStore`] contract without a disk, for tests.
//!
//! It checks keys and offsets exactly like the file store, so code tested against it does not
//! meet new refusals in production. It is not durable: positions die with the value.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::error::OffsetStoreError;
use crate::key::OffsetKey;
use crate::store::OffsetStore;

/// Positions in a `HashMap` behind a mutex. Share it with `Arc` (the trait is implemented for
/// `Arc<T>`).
#[derive(Debug, Default)]
pub struct InMemoryOffsetStore {
    positions: Mutex<HashMap<OffsetKey, i64>>,
}

impl InMemoryOffsetStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn positions(&self) -> std::sync::MutexGuard<'_, HashMap<OffsetKey, i64>> {
        // A panic while holding this lock cannot leave the map half-updated (one insert), so
        // a poisoned lock still guards consistent data.
        self.positions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl OffsetStore for InMemoryOffsetStore {
    async fn load(
        &self,
        consumer: &str,
        topic: &str,
        partition: i32,
    ) -> Result<Option<i64>, OffsetStoreError> {
        let key = OffsetKey::new(consumer, topic, partition)?;
        Ok(self.positions().get(&key).copied())
    }

    async fn save(
        &self,
        consumer: &str,
        topic: &str,
        partition: i32,
        offset: i64,
    ) -> Result<(), OffsetStoreError> {
        let key = OffsetKey::new(consumer, topic, partition)?;
        if offset < 0 {
            return Err(OffsetStoreError::NegativeOffset { key, offset });
        }
        self.positions().insert(key, offset);
        Ok(())
    }
}
