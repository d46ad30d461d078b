//! [`Delivery`]: the future of one sent record, and the ticket the producer keeps for it.
//!
//! A record's outcome is known only when its batch is answered, long after `send` returned. The
//! ticket travels with the record through the accumulator into its batch; it also holds the
//! record's share of the producer's buffer, so buffer space is given back exactly when the
//! record's fate is decided — the producer's backpressure.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::{OwnedSemaphorePermit, oneshot};

use crate::error::ClientError;

/// What a delivery resolves to: the record's offset, or `None` under `ack = NONE` (the broker
/// does not say, and the record was written to the socket).
pub type DeliveryResult = Result<Option<i64>, ClientError>;

/// Resolves when the record's batch is answered (or, with `ack = NONE`, written).
///
/// Dropping it does not cancel the record.
#[derive(Debug)]
pub struct Delivery {
    partition: i32,
    outcome: oneshot::Receiver<DeliveryResult>,
}

impl Delivery {
    pub(crate) fn new(partition: i32, outcome: oneshot::Receiver<DeliveryResult>) -> Self {
        Self { partition, outcome }
    }

    /// The partition the record was assigned to.
    pub fn partition(&self) -> i32 {
        self.partition
    }
}

impl Future for Delivery {
    type Output = DeliveryResult;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<DeliveryResult> {
        Pin::new(&mut self.outcome)
            .poll(cx)
            .map(|outcome| outcome.unwrap_or(Err(ClientError::ProducerClosed)))
    }
}

/// The producer's side of a [`Delivery`].
#[derive(Debug)]
pub(crate) struct Ticket {
    outcome: oneshot::Sender<DeliveryResult>,
    _buffer: OwnedSemaphorePermit,
}

impl Ticket {
    pub(crate) fn new(
        outcome: oneshot::Sender<DeliveryResult>,
        buffer: OwnedSemaphorePermit,
    ) -> Self {
        Self {
            outcome,
            _buffer: buffer,
        }
    }

    /// Settles the record and gives its buffer space back.
    pub(crate) fn settle(self, result: DeliveryResult) {
        let _ = self.outcome.send(result);
    }
}
