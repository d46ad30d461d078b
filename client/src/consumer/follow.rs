//! [`Follow`]: a partition's records as they arrive, forever.
//!
//! Each FETCH is v2 with `maxWaitMillis` = `max_wait_ms` and `minBytes` = `min_bytes`: a
//! caught-up consumer's request waits at the broker until a record arrives or the wait ends, so
//! following an idle partition costs one request per `max_wait_ms`, not a busy loop. An answer
//! with no records is not handed to the caller; the next long poll starts at once.

use futures::Stream;

use crate::consumer::{Batch, Consumer};
use crate::error::ClientError;

/// Follows one partition from the consumer's position.
#[derive(Debug)]
pub struct Follow {
    consumer: Consumer,
}

impl Follow {
    pub(crate) fn new(consumer: Consumer) -> Self {
        Self { consumer }
    }

    /// The next offset to read.
    pub fn position(&self) -> i64 {
        self.consumer.position
    }

    /// Waits for the next non-empty batch. On an error (e.g. `OFFSET_OUT_OF_RANGE` after
    /// retention passed the position) the position stays and the error is returned, not
    /// retried: calling again retries once more.
    pub async fn next_batch(&mut self) -> Result<Batch, ClientError> {
        loop {
            let batch = self.consumer.fetch_batch(true).await?;
            if !batch.is_empty() {
                return Ok(batch);
            }
        }
    }

    /// The batches as an endless stream; it yields the first error and then ends.
    pub fn into_stream(self) -> impl Stream<Item = Result<Batch, ClientError>> + Send {
        futures::stream::unfold(Some(self), |state| async move {
            let mut follow = state?;
            match follow.next_batch().await {
                Ok(batch) => Some((Ok(batch), Some(follow))),
                Err(error) => Some((Err(error), None)),
            }
        })
    }

    /// The consumer, at the current position.
    pub fn into_consumer(self) -> Consumer {
        self.consumer
    }
}
