//! The producer's task: takes ready batches out of the shared accumulator and submits them.
//!
//! `send` appends to the accumulator itself (under a mutex held for one `memcpy`), so the task
//! does per-**batch** work only. It sleeps until one of three things happens:
//! * a `send` closed or opened a batch (it is woken through a [`Notify`], once per batch);
//! * the earliest linger deadline passed (one pinned [`Sleep`], reset only when that deadline
//!   changes);
//! * a flush was asked for, or every producer handle is gone (the command channel).
//!
//! It submits every ready batch to the connection itself, one after another, so batches of one
//! partition reach the broker in the order they were closed (the connection's writer preserves
//! submission order). Only the waiting for answers is spread over spawned tasks, bounded by
//! `max_in_flight_batches`.

use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use booblik_protocol::{AckPolicy, TopicName};
use tokio::sync::{Notify, Semaphore, mpsc, oneshot};
use tokio::time::Instant;

use crate::connection::Redial;
use crate::error::ClientError;
use crate::producer::accumulator::{Accumulator, ReadyBatch};
use crate::producer::delivery::BatchOutcome;

/// What the producer handles and its task share.
#[derive(Debug)]
pub(crate) struct Shared {
    /// Open and closed batches.
    batches: Mutex<Accumulator<BatchOutcome>>,
    /// Woken when a batch closes or opens.
    pub(crate) wake: Notify,
    /// Bytes of records accepted and not yet settled (the producer's backpressure).
    pub(crate) buffer: Semaphore,
}

impl Shared {
    pub(crate) fn new(config: &crate::producer::ProducerConfig) -> Self {
        Self {
            batches: Mutex::new(Accumulator::new(
                Duration::from_millis(config.linger_ms),
                config.max_batch_bytes,
            )),
            wake: Notify::new(),
            buffer: Semaphore::new(config.buffer_bytes),
        }
    }

    /// The accumulator. Nothing panics while holding it except on a broken invariant, after
    /// which the batches are still consistent (an append either happened or did not), so a
    /// poisoned lock is taken over rather than propagated.
    pub(crate) fn batches(&self) -> MutexGuard<'_, Accumulator<BatchOutcome>> {
        self.batches.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What a [`Producer`](crate::Producer) asks of its task, besides records.
#[derive(Debug)]
pub(crate) enum Command {
    /// Send every open batch and report when every batch sent so far is settled.
    Flush { done: oneshot::Sender<()> },
}

pub(crate) struct ProducerTask {
    topic: TopicName,
    ack: AckPolicy,
    /// The producer's own connection, reopened when it broke (failed batches are not retried).
    redial: Redial,
    shared: Arc<Shared>,
    in_flight: Arc<Semaphore>,
    max_in_flight: u32,
}

impl ProducerTask {
    pub(crate) fn new(
        topic: TopicName,
        redial: Redial,
        shared: Arc<Shared>,
        config: &crate::producer::ProducerConfig,
    ) -> Self {
        Self {
            topic,
            ack: config.ack,
            redial,
            shared,
            in_flight: Arc::new(Semaphore::new(config.max_in_flight_batches)),
            max_in_flight: config.max_in_flight_batches as u32,
        }
    }

    /// Runs until every producer handle is gone; then sends what is left and waits for it.
    pub(crate) async fn run(mut self, mut commands: mpsc::Receiver<Command>) {
        // Far enough never to fire before it is reset to a real deadline.
        let mut linger = pin!(tokio::time::sleep(Duration::from_hours(24)));
        let shared = Arc::clone(&self.shared);
        loop {
            // Register for a wake-up before looking, so a batch closed right after the look
            // still wakes us (`Notify` keeps one permit for a `notified` not yet polled).
            let woken = shared.wake.notified();
            let (ready, next_deadline) = {
                let mut batches = shared.batches();
                (batches.take_ready(Instant::now()), batches.next_deadline())
            };
            if !ready.is_empty() {
                for batch in ready {
                    self.send(batch).await;
                }
                // Sending took time: records kept arriving. Look again before sleeping.
                continue;
            }
            if let Some(deadline) = next_deadline
                && linger.deadline() != deadline
            {
                linger.as_mut().reset(deadline);
            }
            tokio::select! {
                command = commands.recv() => match command {
                    Some(Command::Flush { done }) => {
                        self.flush().await;
                        let _ = done.send(());
                    }
                    None => {
                        self.flush().await;
                        return;
                    }
                },
                () = woken => {}
                () = &mut linger, if next_deadline.is_some() => {}
            }
        }
    }

    async fn flush(&mut self) {
        let all = self.shared.batches().take_all();
        for batch in all {
            self.send(batch).await;
        }
        // Every permit back means every batch sent so far is settled.
        let _all = self
            .in_flight
            .acquire_many(self.max_in_flight)
            .await
            .expect("the in-flight semaphore is never closed");
    }

    async fn send(&mut self, batch: ReadyBatch<BatchOutcome>) {
        let permit = Arc::clone(&self.in_flight)
            .acquire_owned()
            .await
            .expect("the in-flight semaphore is never closed");
        let ReadyBatch {
            partition,
            records,
            state: outcome,
        } = batch;
        let count = records.count();
        let submitted = match self.redial.connection().await {
            Ok(connection) => {
                connection
                    .submit_produce(&self.topic, partition, self.ack, records)
                    .await
            }
            Err(e) => Err(e),
        };
        let shared = Arc::clone(&self.shared);
        match submitted {
            Ok(answer) => {
                tracing::trace!(topic = %self.topic, partition, records = count, "batch submitted");
                tokio::spawn(async move {
                    let result = answer.wait().await;
                    settle(&shared, outcome, result.map(|r| r.map(|r| r.base_offset)));
                    drop(permit);
                });
            }
            Err(error) => settle(&shared, outcome, Err(error)),
        }
    }
}

/// Settles every record of a batch and gives its buffer space back.
fn settle(shared: &Shared, outcome: BatchOutcome, result: Result<Option<i64>, ClientError>) {
    let permits = outcome.buffer_permits() as usize;
    outcome.settle(result);
    shared.buffer.add_permits(permits);
}
