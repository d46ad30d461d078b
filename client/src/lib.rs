//! Async client for booblik: a pipelined connection, a batching producer, and consumers that
//! replay history or follow new records.
//!
//! It speaks the booblik wire protocol (through `booblik-protocol`, the same codec the broker
//! uses) and works against any broker that does, not only ours.
//!
//! # Layout
//!
//! | item | file | what it is |
//! |---|---|---|
//! | [`Client`] | `client.rs` | entry point: broker address, shared connection, factories |
//! | [`Connection`] | `connection/` | one pipelined TCP connection: writer task, FIFO matching of answers, timeouts |
//! | [`ConnectionConfig`] | `connection/config.rs` | connect/request timeouts, queue depths, in-flight limit |
//! | [`Redial`] | `connection/redial.rs` | a connection reopened on demand, no lock held across a connect |
//! | [`Topic`], [`Partitioner`] | `topic.rs`, `partitioner.rs` | METADATA of a topic; FNV-1a for keys, round-robin without |
//! | [`Producer`], [`ProducerConfig`], [`Delivery`] | `producer/` | per-partition batching, linger from the first record, backpressure |
//! | [`Consumer`], [`Replay`], [`Follow`] | `consumer/` | a position in a partition; history to the high watermark; long-poll following |
//! | [`Batch`], [`Record`] | `consumer/batch.rs` | whole, CRC-verified records; partial tails dropped |
//! | [`checkpointing`] | `checkpointing.rs` | resume from an `OffsetStore`, save after the handler (at-least-once) |
//! | [`ClientError`] | `error.rs` | every failure, typed |
//! | binaries | `src/bin/` | `booblik` (CLI for people), `booblik-conformance` (the cross-language contract) |
//!
//! # Producing
//!
//! ```no_run
//! use booblik_client::{Client, ConnectionConfig, ProducerConfig};
//!
//! # async fn example() -> Result<(), booblik_client::ClientError> {
//! let client = Client::connect("127.0.0.1:9092", ConnectionConfig::default()).await?;
//! let producer = client.producer("events", ProducerConfig::default()).await?;
//! // Same key, same partition, in order. `send` waits only when the buffer is full.
//! let delivery = producer.send(Some(b"user-1"), "signed up").await?;
//! producer.send(Some(b"user-1"), "logged in").await?;
//! let offset = delivery.await?; // Some(offset) once the broker answered (None with ack NONE)
//! println!("first event at offset {offset:?}");
//! producer.flush().await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Replaying history
//!
//! ```no_run
//! use booblik_client::{Client, ConnectionConfig, ConsumerConfig, StartPosition};
//!
//! # async fn example() -> Result<(), booblik_client::ClientError> {
//! let client = Client::connect("127.0.0.1:9092", ConnectionConfig::default()).await?;
//! let consumer = client
//!     .consumer("events", 0, StartPosition::Earliest, ConsumerConfig::default())
//!     .await?;
//! let mut replay = consumer.replay().await?; // ends at the high watermark seen now
//! while let Some(batch) = replay.next_batch().await? {
//!     for record in &batch.records {
//!         println!("{} {:?}", record.offset, record.payload);
//!     }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # Following new records
//!
//! ```no_run
//! use booblik_client::{Client, ConnectionConfig, ConsumerConfig, StartPosition};
//! use futures::StreamExt;
//!
//! # async fn example() -> Result<(), booblik_client::ClientError> {
//! let client = Client::connect("127.0.0.1:9092", ConnectionConfig::default()).await?;
//! let consumer = client
//!     .consumer("events", 0, StartPosition::Latest, ConsumerConfig::default())
//!     .await?;
//! let mut batches = Box::pin(consumer.follow().into_stream()); // long polls, never ends
//! while let Some(batch) = batches.next().await {
//!     let batch = batch?;
//!     println!("{} records, next offset {}", batch.len(), batch.next_offset);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Runnable versions are in `examples/` (`cargo run -p booblik-client --example produce`).
//! `docs/client.md` explains the design decisions.

pub mod checkpointing;
mod client;
pub mod connection;
pub mod consumer;
pub mod error;
mod partitioner;
pub mod producer;
mod topic;

pub use booblik_protocol::{AckPolicy, ErrorCode, TopicName};
pub use client::Client;
pub use connection::{Connection, ConnectionConfig, Dialer, Redial, ResponseFuture};
pub use consumer::{
    Batch, BatchSource, Consumer, ConsumerConfig, Follow, Record, Replay, StartPosition,
};
pub use error::ClientError;
pub use partitioner::Partitioner;
pub use producer::{Delivery, DeliveryResult, Producer, ProducerConfig};
pub use topic::Topic;
