//! The peers of the task-queue experiment: the servers a user would run a task queue on instead
//! of claims over a booblik log, driven through the same scenarios as booblik's workers.
//!
//! | peer | server | claim | done | lease expiry | extend | dead letter |
//! |---|---|---|---|---|---|---|
//! | `redis` | Redis Streams, no persistence | `XREADGROUP GROUP g c COUNT 1 STREAMS tasks >` (a consumer group hands each entry to one consumer) | `XACK` (1: it counted; 0: the entry was no longer pending) | `XAUTOCLAIM … min-idle = lease COUNT 1`, asked every [`redis::RECLAIM_EVERY_MS`] | `XCLAIM … 0 id JUSTID` by the holder: resets the idle time (it cannot tell whether someone else took the entry over: it takes it back) | the entry's delivery count (`XPENDING`) after a reclaim > `max_expired_leases` → `XACK` and `XADD` to a dead stream |
//! | `redis-fsync` | the same, `appendonly yes`, `appendfsync always` | same | same | same | same | same |
//! | `postgres` | PostgreSQL, one table, `synchronous_commit=on` | `UPDATE jobs … WHERE id = (SELECT id … WHERE state='ready' OR (state='leased' AND lease_until < now()) ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING …` | `UPDATE … SET state='done' WHERE id … AND worker … AND attempts = token` (0 rows: fenced) | `lease_until < now()`, in the claim itself | `UPDATE … SET lease_until = now() + lease WHERE … attempts = token AND lease_until > now()` | the `attempts` column: a claim that finds `max_expired_leases` expired attempts sets `state='dead'` |
//! | `postgres-async` | the same, `synchronous_commit=off` | same | same | same | same | same |
//! | `jetstream-workqueue` | NATS JetStream, a 3-node cluster, a work-queue stream at R3 and one durable pull consumer | a pull of one message | a double ack (`+ACK`, confirmed) | `AckWait` = lease: the server redelivers | `+WPI` (in progress) | the delivery count above `max_expired_leases`: ack + publish to a dead stream ([`jetstream`]) |
//!
//! **A done and the next claim in one round trip.** Booblik's worker appends a finished task's
//! done and its next claim as one batch (`WorkerConfig::done_with_next_claim`): one round trip
//! and one fsync for both. Every peer worker gets the same: Redis sends `XACK` and
//! `XREADGROUP` in one pipeline (applied in order and, with `appendfsync always`, fsynced once
//! before the replies; when the `XAUTOCLAIM` is due the two go one after the other);
//! PostgreSQL runs the done `UPDATE` and the claim `UPDATE` as one statement (two
//! data-modifying CTEs: one transaction, one commit); JetStream sends the double ack and the
//! pull together. `--separate-dones` turns it off everywhere.
//!
//! Each peer worker runs like a booblik worker ([`super::thread`]): its own OS thread, its own
//! current-thread runtime, its own connection. The driver ([`driver`]) is shared; [`redis`] and
//! [`postgres`] are the two queues. Idle workers wait without polling hard: Redis with a blocking
//! `XREADGROUP` (woken by the next entry), PostgreSQL on `LISTEN` (the submitter's insert
//! notifies), each at most [`driver::IDLE_WAIT_MS`] so lapsed leases are found.
//!
//! The harness starts each server itself ([`server`]) once per invocation, on 127.0.0.1 on a free
//! port with a temporary directory, resets its state before every run, and stops it by its pid
//! at the end; `--redis-url` / `--postgres-url` name running servers instead.

pub mod driver;
pub mod jetstream;
pub mod postgres;
pub mod redis;
pub mod server;

use std::path::Path;

use anyhow::Context;

use self::server::ServerProcess;

/// A peer queue, as named on the command line (`--peers`) and in the report (`"system"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, clap::ValueEnum)]
pub enum Peer {
    /// Redis Streams with a consumer group, no persistence.
    Redis,
    /// Redis Streams, `appendonly yes` + `appendfsync always`: every write fsynced before its
    /// reply.
    RedisFsync,
    /// PostgreSQL `FOR UPDATE SKIP LOCKED`, `synchronous_commit=on`.
    Postgres,
    /// PostgreSQL, `synchronous_commit=off`: commits are not waited for on disk.
    PostgresAsync,
    /// NATS JetStream's work queue (AckWait, InProgress, a delivery-count dead letter) on an R3
    /// stream of a 3-node cluster.
    JetstreamWorkqueue,
}

impl Peer {
    /// The name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Peer::Redis => "redis",
            Peer::RedisFsync => "redis-fsync",
            Peer::Postgres => "postgres",
            Peer::PostgresAsync => "postgres-async",
            Peer::JetstreamWorkqueue => "jetstream-workqueue",
        }
    }

    /// The peer named `name` in a report.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            Peer::Redis,
            Peer::RedisFsync,
            Peer::Postgres,
            Peer::PostgresAsync,
            Peer::JetstreamWorkqueue,
        ]
        .into_iter()
        .find(|p| p.name() == name)
    }

    /// Whether an acknowledged claim survives a crash of the server's machine: the peers the
    /// headline compares booblik's FORCED claims with. JetStream R3 survives the loss of one
    /// node, but its 2.9 servers acknowledge before any fsync (`docs/jetstream.md`): not here.
    pub fn durable(self) -> bool {
        matches!(self, Peer::RedisFsync | Peer::Postgres)
    }

    /// Which server the peer runs on.
    fn server(self) -> ServerKind {
        match self {
            Peer::Redis | Peer::RedisFsync => ServerKind::Redis,
            Peer::Postgres | Peer::PostgresAsync => ServerKind::Postgres,
            Peer::JetstreamWorkqueue => ServerKind::Nats,
        }
    }
}

/// The server programs peers run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServerKind {
    Redis,
    Postgres,
    Nats,
}

/// Where a peer's server is, and its process if the harness started it.
#[derive(Debug)]
pub struct Endpoint {
    /// Connection URL (Redis) or connection string (PostgreSQL).
    pub url: String,
    process: Option<ServerProcess>,
    /// The NATS cluster the harness started (its nodes die with it), and its directory.
    cluster: Option<(
        booblik_samples::support::nats_cluster::NatsCluster,
        tempfile::TempDir,
    )>,
}

impl Endpoint {
    /// An error if the harness's server process has exited.
    pub fn check_alive(&mut self) -> anyhow::Result<()> {
        match self.process.as_mut().and_then(ServerProcess::exited) {
            Some(why) => Err(anyhow::anyhow!(why)),
            None => Ok(()),
        }
    }
}

/// Running servers to use instead of starting them (`--redis-url`, `--postgres-url`,
/// `--nats-url`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ServerUrls<'a> {
    /// A Redis URL.
    pub redis: Option<&'a str>,
    /// A libpq connection string.
    pub postgres: Option<&'a str>,
    /// NATS URLs, comma-separated.
    pub nats: Option<&'a str>,
}

/// The servers of one invocation, one per peer.
#[derive(Debug, Default)]
pub struct PeerServers {
    servers: Vec<(Peer, Endpoint)>,
}

impl PeerServers {
    /// Starts a server for every peer (or uses the named ones) and waits until each accepts
    /// connections.
    pub async fn start(
        peers: &[Peer],
        urls: &ServerUrls<'_>,
        data_parent: &Path,
    ) -> anyhow::Result<Self> {
        let mut servers = PeerServers::default();
        for &peer in peers {
            if servers.servers.iter().any(|(p, _)| *p == peer) {
                continue;
            }
            let named = match peer.server() {
                ServerKind::Redis => urls.redis,
                ServerKind::Postgres => urls.postgres,
                ServerKind::Nats => urls.nats,
            };
            let endpoint = match (peer.server(), named) {
                (_, Some(url)) => Endpoint {
                    url: url.to_owned(),
                    process: None,
                    cluster: None,
                },
                (ServerKind::Redis, None) => {
                    let port = server::free_port()?;
                    let process = server::start_redis(data_parent, port, peer == Peer::RedisFsync)?;
                    Endpoint {
                        url: format!("redis://127.0.0.1:{port}/"),
                        process: Some(process),
                        cluster: None,
                    }
                }
                (ServerKind::Postgres, None) => {
                    let port = server::free_port()?;
                    let process =
                        server::start_postgres(data_parent, port, peer == Peer::Postgres)?;
                    Endpoint {
                        url: format!("host=127.0.0.1 port={port} user=postgres dbname=postgres"),
                        process: Some(process),
                        cluster: None,
                    }
                }
                (ServerKind::Nats, None) => {
                    let (cluster, dir) = jetstream::start_cluster(data_parent)?;
                    Endpoint {
                        url: cluster.urls().join(","),
                        process: None,
                        cluster: Some((cluster, dir)),
                    }
                }
            };
            let mut endpoint = endpoint;
            let ready = match peer.server() {
                ServerKind::Redis => redis::wait_ready(&endpoint.url).await,
                ServerKind::Postgres => postgres::wait_ready(&endpoint.url).await,
                ServerKind::Nats => jetstream::wait_ready(&endpoint.url).await,
            };
            if let Err(error) = ready {
                endpoint.check_alive()?;
                return Err(error).with_context(|| format!("{} did not start", peer.name()));
            }
            tracing::info!(
                peer = peer.name(),
                url = endpoint.url,
                pid = endpoint.process.as_ref().and_then(ServerProcess::pid),
                "peer server ready"
            );
            servers.servers.push((peer, endpoint));
        }
        Ok(servers)
    }

    /// The server of `peer`.
    pub fn endpoint(&mut self, peer: Peer) -> anyhow::Result<&mut Endpoint> {
        self.servers
            .iter_mut()
            .find(|(p, _)| *p == peer)
            .map(|(_, endpoint)| endpoint)
            .with_context(|| format!("no server for {}", peer.name()))
    }

    /// Stops every server the harness started (also done on drop).
    pub fn stop(mut self) {
        for (_, endpoint) in &mut self.servers {
            if let Some(process) = &mut endpoint.process {
                process.stop();
            }
            // Dropping the cluster kills its nodes by their pids.
            endpoint.cluster = None;
        }
    }
}
