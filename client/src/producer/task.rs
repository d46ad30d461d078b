//! The producer's task: owns the accumulator, the linger timer and the connection.
//!
//! One task per producer keeps the rules simple. Records arrive over a bounded channel in
//! `send` order; the task puts them into per-partition batches and *submits* every ready batch
//! to the connection itself, one after another, so batches of one partition reach the broker
//! in the order they were closed (the connection's writer preserves submission order). Only
//! the waiting for answers is spread over spawned tasks, bounded by `max_in_flight_batches`.

use std::sync::Arc;
use std::time::Duration;

use booblik_protocol::{AckPolicy, ProduceResponse, TopicName};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::time::Instant;

use crate::client::Client;
use crate::connection::Connection;
use crate::error::ClientError;
use crate::producer::accumulator::{Accumulator, ReadyBatch};
use crate::producer::delivery::Ticket;

/// What a [`Producer`](crate::Producer) asks of its task.
#[derive(Debug)]
pub(crate) enum Command {
    /// Add a record (non-empty, size already checked) to its partition's batch.
    Append {
        partition: i32,
        payload: bytes::Bytes,
        ticket: Ticket,
    },
    /// Send every open batch and report when every batch sent so far is settled.
    Flush { done: oneshot::Sender<()> },
}

pub(crate) struct ProducerTask {
    client: Client,
    topic: TopicName,
    ack: AckPolicy,
    connection: Option<Connection>,
    accumulator: Accumulator<Ticket>,
    in_flight: Arc<Semaphore>,
    max_in_flight: u32,
}

impl ProducerTask {
    pub(crate) fn new(
        client: Client,
        topic: TopicName,
        connection: Connection,
        config: &crate::producer::ProducerConfig,
    ) -> Self {
        Self {
            client,
            topic,
            ack: config.ack,
            connection: Some(connection),
            accumulator: Accumulator::new(
                Duration::from_millis(config.linger_ms),
                config.max_batch_bytes,
            ),
            in_flight: Arc::new(Semaphore::new(config.max_in_flight_batches)),
            max_in_flight: config.max_in_flight_batches as u32,
        }
    }

    /// Runs until every producer handle is gone; then sends what is left and waits for it.
    pub(crate) async fn run(mut self, mut commands: mpsc::Receiver<Command>) {
        loop {
            let deadline = self.accumulator.next_deadline();
            tokio::select! {
                command = commands.recv() => match command {
                    Some(Command::Append { partition, payload, ticket }) => {
                        let ready = self.accumulator.append(partition, &payload, ticket, Instant::now());
                        for batch in ready {
                            self.send(batch).await;
                        }
                    }
                    Some(Command::Flush { done }) => {
                        self.flush().await;
                        let _ = done.send(());
                    }
                    None => {
                        self.flush().await;
                        return;
                    }
                },
                () = sleep_until(deadline), if deadline.is_some() => {
                    for batch in self.accumulator.take_expired(Instant::now()) {
                        self.send(batch).await;
                    }
                }
            }
        }
    }

    async fn flush(&mut self) {
        for batch in self.accumulator.take_all() {
            self.send(batch).await;
        }
        // Every permit back means every batch sent so far is settled.
        let _all = self
            .in_flight
            .acquire_many(self.max_in_flight)
            .await
            .expect("the in-flight semaphore is never closed");
    }

    async fn connection(&mut self) -> Result<Connection, ClientError> {
        if let Some(connection) = &self.connection
            && !connection.is_closed()
        {
            return Ok(connection.clone());
        }
        let connection = self.client.open_connection().await?;
        self.connection = Some(connection.clone());
        Ok(connection)
    }

    async fn send(&mut self, batch: ReadyBatch<Ticket>) {
        let permit = Arc::clone(&self.in_flight)
            .acquire_owned()
            .await
            .expect("the in-flight semaphore is never closed");
        let ReadyBatch {
            partition,
            records,
            tickets,
        } = batch;
        let count = records.count();
        let submitted = match self.connection().await {
            Ok(connection) => {
                connection
                    .submit_produce(&self.topic, partition, self.ack, records)
                    .await
            }
            Err(e) => Err(e),
        };
        match submitted {
            Ok(answer) => {
                tracing::trace!(topic = %self.topic, partition, records = count, "batch submitted");
                tokio::spawn(async move {
                    settle(tickets, answer.wait().await);
                    drop(permit);
                });
            }
            Err(error) => settle(tickets, Err(error)),
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Gives each record of a batch its outcome: consecutive offsets from the base offset, `None`
/// under `ack = NONE`, or the batch's error.
fn settle(tickets: Vec<Ticket>, result: Result<Option<ProduceResponse>, ClientError>) {
    match result {
        Ok(Some(response)) => {
            for (index, ticket) in tickets.into_iter().enumerate() {
                ticket.settle(Ok(Some(response.base_offset + index as i64)));
            }
        }
        Ok(None) => {
            for ticket in tickets {
                ticket.settle(Ok(None));
            }
        }
        Err(error) => {
            for ticket in tickets {
                ticket.settle(Err(error.clone()));
            }
        }
    }
}
