//! The peers of the task-queue experiment: the servers a user would run a task queue on instead
//! of claims over a booblik log, driven through the same scenarios as booblik's workers.
//!
//! | peer | server | claim | done | lease expiry | extend | dead letter |
//! |---|---|---|---|---|---|---|
//! | `redis` | Redis Streams, no persistence | `XREADGROUP GROUP g c COUNT 1 STREAMS tasks >` (a consumer group hands each entry to one consumer) | `XACK` (1: it counted; 0: the entry was no longer pending) | `XAUTOCLAIM … min-idle = lease COUNT 1`, asked every [`redis::RECLAIM_EVERY_MS`] | `XCLAIM … 0 id JUSTID` by the holder: resets the idle time (it cannot tell whether someone else took the entry over: it takes it back) | the entry's delivery count (`XPENDING`) after a reclaim > `max_expired_leases` → `XACK` and `XADD` to a dead stream |
//! | `redis-fsync` | the same, `appendonly yes`, `appendfsync always` | same | same | same | same | same |
//! | `postgres` | PostgreSQL, one table, `synchronous_commit=on` | `UPDATE jobs … WHERE id = (SELECT id … WHERE state='ready' OR (state='leased' AND lease_until < now()) ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING …` | `UPDATE … SET state='done' WHERE id … AND worker … AND attempts = token` (0 rows: fenced) | `lease_until < now()`, in the claim itself | `UPDATE … SET lease_until = now() + lease WHERE … attempts = token AND lease_until > now()` | the `attempts` column: a claim that finds `max_expired_leases` expired attempts sets `state='dead'` |
//! | `postgres-async` | the same, `synchronous_commit=off` | same | same | same | same | same |
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
}

impl Peer {
    /// The name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Peer::Redis => "redis",
            Peer::RedisFsync => "redis-fsync",
            Peer::Postgres => "postgres",
            Peer::PostgresAsync => "postgres-async",
        }
    }

    /// The peer named `name` in a report.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            Peer::Redis,
            Peer::RedisFsync,
            Peer::Postgres,
            Peer::PostgresAsync,
        ]
        .into_iter()
        .find(|p| p.name() == name)
    }

    /// Whether an acknowledged claim survives a crash of the server's machine: the peers the
    /// headline compares booblik's FORCED claims with.
    pub fn durable(self) -> bool {
        matches!(self, Peer::RedisFsync | Peer::Postgres)
    }

    fn is_redis(self) -> bool {
        matches!(self, Peer::Redis | Peer::RedisFsync)
    }
}

/// Where a peer's server is, and its process if the harness started it.
#[derive(Debug)]
pub struct Endpoint {
    /// Connection URL (Redis) or connection string (PostgreSQL).
    pub url: String,
    process: Option<ServerProcess>,
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
        redis_url: Option<&str>,
        postgres_url: Option<&str>,
        data_parent: &Path,
    ) -> anyhow::Result<Self> {
        let mut servers = PeerServers::default();
        for &peer in peers {
            if servers.servers.iter().any(|(p, _)| *p == peer) {
                continue;
            }
            let endpoint = match (peer.is_redis(), redis_url, postgres_url) {
                (true, Some(url), _) | (false, _, Some(url)) => Endpoint {
                    url: url.to_owned(),
                    process: None,
                },
                (true, None, _) => {
                    let port = server::free_port()?;
                    let process =
                        server::start_redis(data_parent, port, peer == Peer::RedisFsync)?;
                    Endpoint {
                        url: format!("redis://127.0.0.1:{port}/"),
                        process: Some(process),
                    }
                }
                (false, _, None) => {
                    let port = server::free_port()?;
                    let process =
                        server::start_postgres(data_parent, port, peer == Peer::Postgres)?;
                    Endpoint {
                        url: format!("host=127.0.0.1 port={port} user=postgres dbname=postgres"),
                        process: Some(process),
                    }
                }
            };
            let mut endpoint = endpoint;
            let ready = if peer.is_redis() {
                redis::wait_ready(&endpoint.url).await
            } else {
                postgres::wait_ready(&endpoint.url).await
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
        }
    }
}
