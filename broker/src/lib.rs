//! The booblik broker: a single-node append-only log with a TCP server.
//!
//! # Layout
//!
//! | module | what it holds |
//! |---|---|
//! | [`storage`] | segmented log per partition: segments, sparse index, recovery, retention, the writer thread with group commit |
//! | [`server`] | [`Broker`]: accept loop, sessions, PRODUCE/FETCH/METADATA handlers, zero-copy FETCH, metrics |
//! | [`config`] | [`BrokerConfig`], [`FetchMode`], topic list parsing |
//! | `main.rs` | the `booblik-broker` binary: flags and `BOOBLIK_*` variables, `health`, signals |
//!
//! The wire format lives in the `booblik-protocol` crate, shared with the client.
//!
//! # Embedding
//!
//! ```no_run
//! # async fn run() -> Result<(), booblik_broker::BrokerError> {
//! use booblik_broker::{Broker, BrokerConfig};
//! let mut config = BrokerConfig::default();
//! config.bind = "127.0.0.1:0".parse().unwrap();
//! config.storage.data_dir = "/tmp/booblik-example".into();
//! let broker = Broker::start(config).await?;
//! println!("listening on {}", broker.local_addr());
//! broker.shutdown().await?;
//! # Ok(()) }
//! ```

pub mod config;
pub mod server;
pub mod storage;

pub use config::{BrokerConfig, FetchMode, InvalidConfig, parse_topics};
pub use server::{Broker, BrokerError, MAX_CONCURRENT_COLD_READS};
