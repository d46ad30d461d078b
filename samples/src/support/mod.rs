//! Plumbing shared by the samples, kept out of the sample files so they stay about the log.
//!
//! | module | what it holds |
//! |---|---|
//! | [`cli`] | the flags every events sample takes (`--broker`, `--stats-bind`, `--topic`, `--engine`, `--nats-url`), and opening the engine they name |
//! | [`clock`] | the one wall clock records are stamped with |
//! | [`logging`] | `tracing` to stderr, filtered by `RUST_LOG` |
//! | [`shutdown`] | one stop signal for many tasks; Ctrl-C and SIGTERM trigger it |
//! | [`per_partition`] | one task per partition with a shared stop signal |
//! | [`retry`] | which client errors are worth retrying, and connecting to a broker that is still starting |
//! | [`pacer`] | sending at a fixed rate without drift or bursts |
//! | [`stats_http`] | `GET /stats` (and any extra routes) over HTTP, plus a periodic stats log line |
//! | [`embedded_broker`] | a broker in the same process, for the demo and the tests |
//! | [`example`] | `--broker host:port`, or an embedded broker: how every example in `examples/` starts |
//! | [`nats_cluster`] | a local NATS JetStream cluster from an installed `nats-server` |
//! | [`tansu`] | a local Kafka-API broker (`tansu`) for the relay's Kafka tests |

pub mod cli;
pub mod clock;
pub mod embedded_broker;
pub mod example;
pub mod logging;
pub mod nats_cluster;
pub mod pacer;
pub mod per_partition;
pub mod retry;
pub mod shutdown;
pub mod stats_http;
pub mod tansu;
