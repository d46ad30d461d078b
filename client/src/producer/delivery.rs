//! [`Delivery`]: the future of one sent record, and the outcome the producer keeps per batch.
//!
//! A record's outcome is known only when its batch is answered, long after `send` returned, and
//! every record of a batch learns it at the same moment. So the outcome is kept **per batch**
//! ([`BatchOutcome`]): one channel, completed once, shared by every record's [`Delivery`]
//! (`futures`' `Shared`), each of which adds its index in the batch to the batch's base offset.
//! Sending a record costs a reference-count increment, not a channel; settling a batch of ten
//! thousand records is one send and one wake-up per *awaited* delivery.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use booblik_protocol::WireError;
use futures::FutureExt;
use futures::future::Shared;
use tokio::sync::oneshot;

use crate::error::ClientError;

/// What a delivery resolves to: the record's offset, or `None` under `ack = NONE` (the broker
/// does not say, and the record was written to the socket).
pub type DeliveryResult = Result<Option<i64>, ClientError>;

/// What a batch resolves to: its base offset, `None` under `ack = NONE`, or the batch's error.
pub(crate) type BatchResult = Result<Option<i64>, ClientError>;

/// Resolves when the record's batch is answered (or, with `ack = NONE`, written).
///
/// Dropping it does not cancel the record.
pub struct Delivery {
    partition: i32,
    index: i64,
    outcome: Shared<oneshot::Receiver<BatchResult>>,
}

impl fmt::Debug for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Delivery")
            .field("partition", &self.partition)
            .field("index_in_batch", &self.index)
            .field("outcome", &self.outcome.peek())
            .finish()
    }
}

impl Delivery {
    /// The partition the record was assigned to.
    pub fn partition(&self) -> i32 {
        self.partition
    }
}

impl Future for Delivery {
    type Output = DeliveryResult;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<DeliveryResult> {
        let index = self.index;
        self.outcome.poll_unpin(cx).map(|outcome| match outcome {
            Ok(Ok(None)) => Ok(None),
            Ok(Ok(Some(base_offset))) => record_offset(base_offset, index).map(Some),
            Ok(Err(error)) => Err(error),
            // The producer's task ended without settling the batch (the runtime shut down).
            Err(oneshot::error::RecvError { .. }) => Err(ClientError::ProducerClosed),
        })
    }
}

/// The offset of the record at `index` in a batch the broker placed at `base_offset`. The base
/// comes from the broker: a negative one, or one whose record would not leave room for the high
/// watermark after it (the largest record offset is `i64::MAX − 1`, as the broker's storage and
/// the consumer hold), is a broken (or hostile) broker, reported as a protocol violation rather
/// than a panic or a wrapped offset.
fn record_offset(base_offset: i64, index: i64) -> Result<i64, ClientError> {
    let offset = base_offset.checked_add(index);
    match offset {
        Some(offset) if base_offset >= 0 && offset.checked_add(1).is_some() => Ok(offset),
        _ => Err(ClientError::Protocol(WireError::InvalidField {
            field: "baseOffset",
            value: base_offset,
            reason: "a record offset must be in 0..i64::MAX (the high watermark after it must \
                     still be an int64)",
        })),
    }
}

/// The producer's side of one batch: the channel its deliveries wait on, and the buffer space
/// its records hold until the batch is settled.
#[derive(Debug)]
pub(crate) struct BatchOutcome {
    sender: oneshot::Sender<BatchResult>,
    receiver: Shared<oneshot::Receiver<BatchResult>>,
    buffer_permits: u32,
}

impl Default for BatchOutcome {
    fn default() -> Self {
        let (sender, receiver) = oneshot::channel();
        Self {
            sender,
            receiver: receiver.shared(),
            buffer_permits: 0,
        }
    }
}

impl BatchOutcome {
    /// Counts a record's buffer permits and hands out its delivery.
    pub(crate) fn add_record(&mut self, partition: i32, index: usize, permits: u32) -> Delivery {
        self.buffer_permits += permits;
        Delivery {
            partition,
            index: index as i64,
            outcome: self.receiver.clone(),
        }
    }

    /// Buffer permits held by the batch's records.
    pub(crate) fn buffer_permits(&self) -> u32 {
        self.buffer_permits
    }

    /// Settles every delivery of the batch.
    pub(crate) fn settle(self, result: BatchResult) {
        // Nobody may be waiting: deliveries are often dropped unawaited.
        let _ = self.sender.send(result);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_record_adds_its_index_to_the_base_offset() {
        let mut outcome = BatchOutcome::default();
        let first = outcome.add_record(0, 0, 1);
        let second = outcome.add_record(0, 1, 1);
        outcome.settle(Ok(Some(41)));
        assert_eq!(first.await.unwrap(), Some(41));
        assert_eq!(second.await.unwrap(), Some(42));
    }

    #[tokio::test]
    async fn a_base_offset_whose_batch_passes_the_largest_int64_is_a_protocol_error() {
        let mut outcome = BatchOutcome::default();
        let first = outcome.add_record(0, 0, 1);
        let second = outcome.add_record(0, 1, 1);
        outcome.settle(Ok(Some(i64::MAX - 1)));
        assert_eq!(first.await.unwrap(), Some(i64::MAX - 1));
        let error = second.await.unwrap_err();
        assert!(
            matches!(
                error,
                ClientError::Protocol(WireError::InvalidField {
                    field: "baseOffset",
                    value,
                    ..
                }) if value == i64::MAX - 1
            ),
            "{error:?}"
        );
    }

    #[tokio::test]
    async fn a_negative_base_offset_is_a_protocol_error() {
        let mut outcome = BatchOutcome::default();
        let first = outcome.add_record(0, 0, 1);
        outcome.settle(Ok(Some(-5)));
        assert!(matches!(
            first.await.unwrap_err(),
            ClientError::Protocol(WireError::InvalidField {
                field: "baseOffset",
                value: -5,
                ..
            })
        ));
    }
}
