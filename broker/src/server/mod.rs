//! The network half of the broker: accept loop, per-connection sessions, zero-copy FETCH.
//!
//! | file | concept |
//! |---|---|
//! | `mod.rs` | [`Broker`]: start, the accept loop, graceful shutdown |
//! | `connections.rs` | the connection limit; at the limit, the longest-idle connection gives way |
//! | `session.rs` | one connection: apply in order, answer in order as each answer is ready; the error rules of SPEC §2 |
//! | `reply.rs` | [`Reply`](reply::Reply): what applying a request yields, without the socket |
//! | `handlers.rs` | applying PRODUCE and METADATA (free functions over the shared state) |
//! | `fetch.rs` | the FETCH pipeline: locate once, long poll on a byte count, slice, payload residency |
//! | `cold_reads.rs` | the one bounded, counted dispatcher of blocking reads |
//! | `sendfile.rs` | `sendfile(2)` on a non-blocking tokio socket |
//! | `metrics.rs` | metric names and the Prometheus exporter |

mod cold_reads;
mod connections;
mod fetch;
mod handlers;
pub mod metrics;
mod reply;
mod sendfile;
mod session;

pub use cold_reads::MAX_CONCURRENT_COLD_READS;
pub use session::{MAX_FRAMES_APPLIED_IN_A_ROW, MAX_WAITING_ANSWER_BYTES, MAX_WAITING_ANSWERS};

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::{info, warn};

use crate::config::{BrokerConfig, InvalidConfig};
use crate::storage::{Storage, StorageError};

/// Why a broker could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    /// A configuration value the broker cannot honour ([`BrokerConfig::validate`]).
    #[error(transparent)]
    Config(#[from] InvalidConfig),
    /// The listen address could not be bound.
    #[error("cannot bind {addr}: {source}")]
    Bind {
        /// Address asked for.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// Opening, recovering or closing the log failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A background task panicked or failed.
    #[error("broker task failed: {0}")]
    Task(String),
}

/// A running broker: listener, sessions and storage. Embeddable (tests, the demo) and what the
/// `booblik-broker` binary runs.
#[derive(Debug)]
pub struct Broker {
    local_addr: SocketAddr,
    storage: Arc<Storage>,
    connections: Arc<connections::Connections>,
    shutdown: watch::Sender<bool>,
    accept_loop: tokio::task::JoinHandle<()>,
}

/// State every session shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: BrokerConfig,
    pub(crate) storage: Arc<Storage>,
    /// Every blocking read of a session goes through it: at most [`MAX_CONCURRENT_COLD_READS`].
    pub(crate) cold_reads: cold_reads::ColdReads,
}

impl Broker {
    /// Checks the configuration, opens (and recovers) the storage, binds the listener and starts
    /// accepting.
    pub async fn start(config: BrokerConfig) -> Result<Broker, BrokerError> {
        config.validate()?;
        let storage_config = config.storage.clone();
        let topics = config.topics.clone();
        // Recovery reads and may truncate files: keep it off the async workers.
        let storage = tokio::task::spawn_blocking(move || Storage::open(storage_config, &topics))
            .await
            .map_err(|e| BrokerError::Task(e.to_string()))??;
        let storage = Arc::new(storage);
        let listener =
            TcpListener::bind(config.bind)
                .await
                .map_err(|source| BrokerError::Bind {
                    addr: config.bind,
                    source,
                })?;
        let local_addr = listener.local_addr().map_err(|source| BrokerError::Bind {
            addr: config.bind,
            source,
        })?;
        if local_addr.ip().is_unspecified() {
            warn!(%local_addr, "listening on a wildcard address: reachable from other hosts");
        }
        info!(
            %local_addr,
            data_dir = %config.storage.data_dir.display(),
            topics = %config
                .topics
                .iter()
                .map(|(t, n)| format!("{t}:{n}"))
                .collect::<Vec<_>>()
                .join(","),
            write_mode = ?config.storage.write_mode,
            fetch_mode = ?config.fetch_mode,
            "broker listening"
        );
        let (shutdown, shutdown_rx) = watch::channel(false);
        let shared = Arc::new(Shared {
            config,
            storage: Arc::clone(&storage),
            cold_reads: cold_reads::ColdReads::new(MAX_CONCURRENT_COLD_READS),
        });
        let connections = Arc::new(connections::Connections::new(shared.config.max_connections));
        let accept_loop = tokio::spawn(accept_loop(
            listener,
            shared,
            Arc::clone(&connections),
            shutdown_rx,
        ));
        Ok(Broker {
            local_addr,
            storage,
            connections,
            shutdown,
            accept_loop,
        })
    }

    /// The bound address (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The storage, for tests and tools that inspect the log directly.
    pub fn storage(&self) -> &Arc<Storage> {
        &self.storage
    }

    /// Connections open now (each with a session); at most `max_connections`.
    pub fn open_connections(&self) -> usize {
        self.connections.open()
    }

    /// Stops accepting, lets every session finish the request it is serving (a long poll is cut
    /// short and answered), then flushes and fsyncs every partition.
    pub async fn shutdown(self) -> Result<(), BrokerError> {
        let _ = self.shutdown.send(true);
        self.accept_loop
            .await
            .map_err(|e| BrokerError::Task(e.to_string()))?;
        let storage = self.storage;
        tokio::task::spawn_blocking(move || storage.close())
            .await
            .map_err(|e| BrokerError::Task(e.to_string()))??;
        info!("broker stopped");
        Ok(())
    }
}

/// Backoff after a failing `accept` (e.g. EMFILE), doubling up to the maximum.
const ACCEPT_BACKOFF_MIN_MS: u64 = 5;
const ACCEPT_BACKOFF_MAX_MS: u64 = 1_000;

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    connections: Arc<connections::Connections>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut sessions = JoinSet::new();
    let mut backoff_ms = ACCEPT_BACKOFF_MIN_MS;
    loop {
        let accepted = tokio::select! {
            _ = shutdown.changed() => break,
            // Reap finished sessions so the set does not grow with every connection ever made.
            Some(_) = sessions.join_next(), if !sessions.is_empty() => continue,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(pair) => {
                backoff_ms = ACCEPT_BACKOFF_MIN_MS;
                pair
            }
            Err(error) => {
                // A failing accept (out of file descriptors, a connection reset before accept)
                // must never end the listener: log, back off, retry.
                warn!(%error, backoff_ms, "accept failed");
                tokio::time::sleep(Duration::from_millis(backoff_ms)).await;
                backoff_ms = (backoff_ms * 2).min(ACCEPT_BACKOFF_MAX_MS);
                continue;
            }
        };
        ::metrics::counter!(metrics::CONNECTIONS_ACCEPTED).increment(1);
        // At the limit the longest-idle connection gives way; when none is idle, the new one.
        let Some(admitted) = connections.admit(peer) else {
            ::metrics::counter!(metrics::CONNECTIONS_REJECTED).increment(1);
            warn!(
                %peer,
                max_connections = shared.config.max_connections,
                "connection limit reached and no connection is idle; closing the new connection"
            );
            drop(stream);
            continue;
        };
        let shared = Arc::clone(&shared);
        let shutdown = shutdown.clone();
        sessions.spawn(session::run(stream, peer, shared, shutdown, admitted));
    }
    drop(listener);
    // Sessions saw the same shutdown signal; wait for each to finish its current request.
    while sessions.join_next().await.is_some() {}
}
