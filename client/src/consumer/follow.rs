//! [`Follow`]: a partition's records as they arrive, forever.
//!
//! Each FETCH is v2 with `maxWaitMillis` = `max_wait_ms` and `minBytes` = `min_bytes`: a
//! caught-up consumer's request waits at the broker until a record arrives or the wait ends, so
//! following an idle partition costs one request per `max_wait_ms`, not a busy loop. An answer
//! with no records is not handed to the caller; the next long poll starts at once — unless the
//! empty answer came back early (a broker that ignores `maxWaitMillis`, or one shutting down):
//! then two empty polls start at least `min(max_wait_ms, MIN_EMPTY_POLL_INTERVAL_MS)` apart,
//! so such a broker gets a slow trickle of FETCHes instead of a hot loop.

use std::time::Duration;

use futures::Stream;
use tokio::time::Instant;

use crate::consumer::config::MIN_EMPTY_POLL_INTERVAL_MS;
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

    /// Connections opened so far (see [`Consumer::connections_opened`]).
    pub fn connections_opened(&self) -> u64 {
        self.consumer.connections_opened()
    }

    /// Waits for the next non-empty batch. On an error (e.g. `OFFSET_OUT_OF_RANGE` after
    /// retention passed the position) the position stays and the error is returned, not
    /// retried: calling again retries once more.
    pub async fn next_batch(&mut self) -> Result<Batch, ClientError> {
        loop {
            let started = Instant::now();
            let batch = self.consumer.fetch_batch(true).await?;
            if !batch.is_empty() {
                return Ok(batch);
            }
            let max_wait_ms = self.consumer.config.max_wait_ms;
            if let Some(pause) = pause_after_empty_answer(started.elapsed(), max_wait_ms) {
                tokio::time::sleep(pause).await;
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

/// How long to pause after an empty answer to a long poll that took `elapsed`, so that empty
/// polls start at least `min(max_wait_ms, MIN_EMPTY_POLL_INTERVAL_MS)` apart. `None` when the
/// broker already waited that long (the normal case: it held the poll for `max_wait_ms`).
fn pause_after_empty_answer(elapsed: Duration, max_wait_ms: i32) -> Option<Duration> {
    let max_wait_ms = u64::try_from(max_wait_ms).unwrap_or(0);
    let interval = Duration::from_millis(MIN_EMPTY_POLL_INTERVAL_MS.min(max_wait_ms));
    interval
        .checked_sub(elapsed)
        .filter(|pause| !pause.is_zero())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn an_empty_answer_after_the_whole_wait_is_followed_by_the_next_poll_at_once() {
        assert_eq!(pause_after_empty_answer(500 * MS, 500), None);
        assert_eq!(pause_after_empty_answer(60_000 * MS, 60_000), None);
        // The broker held the poll for at least the minimum interval: no pause either.
        assert_eq!(pause_after_empty_answer(100 * MS, 60_000), None);
    }

    #[test]
    fn an_empty_answer_that_came_back_at_once_pauses_for_the_rest_of_the_interval() {
        assert_eq!(
            pause_after_empty_answer(Duration::ZERO, 60_000),
            Some(Duration::from_millis(MIN_EMPTY_POLL_INTERVAL_MS))
        );
        assert_eq!(pause_after_empty_answer(30 * MS, 500), Some(70 * MS));
    }

    #[test]
    fn a_wait_shorter_than_the_interval_is_the_callers_choice_and_bounds_the_pause() {
        assert_eq!(pause_after_empty_answer(Duration::ZERO, 20), Some(20 * MS));
        assert_eq!(pause_after_empty_answer(20 * MS, 20), None);
    }
}
