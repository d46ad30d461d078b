//! [`BatchSource`]: what `replay()` and `follow()` have in common, for code (such as
//! [`Checkpointer::run`](crate::checkpointing::Checkpointer::run)) that works with either.

use std::future::Future;

use crate::consumer::{Batch, Follow, Replay};
use crate::error::ClientError;

/// Something that yields batches until it ends (`Ok(None)`); a follow never ends.
pub trait BatchSource: Send {
    /// The next non-empty batch, or `None` at the end.
    fn next_source_batch(
        &mut self,
    ) -> impl Future<Output = Result<Option<Batch>, ClientError>> + Send;
}

impl BatchSource for Replay {
    fn next_source_batch(
        &mut self,
    ) -> impl Future<Output = Result<Option<Batch>, ClientError>> + Send {
        self.next_batch()
    }
}

impl BatchSource for Follow {
    async fn next_source_batch(&mut self) -> Result<Option<Batch>, ClientError> {
        self.next_batch().await.map(Some)
    }
}
