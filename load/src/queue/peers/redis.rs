//! The Redis Streams queue: one stream of tasks, one consumer group, each worker a consumer.
//!
//! The server hands every entry to one consumer (`XREADGROUP … >`) and keeps it in the group's
//! pending entries list until it is acknowledged; an entry idle longer than the lease is taken
//! over with `XAUTOCLAIM`. There is no fencing token a receiver could check: a stalled consumer
//! that wakes up still `XACK`s (and the entry is gone either way) and its effect lands.

use std::time::{Duration, Instant};

use anyhow::Context;
use redis::AsyncConnectionConfig;
use redis::aio::MultiplexedConnection;
use redis::streams::{StreamAutoClaimReply, StreamId, StreamPendingCountReply, StreamReadReply};
use uuid::Uuid;

use super::driver::{ClaimOutcome, Claimed, IDLE_WAIT_MS};

/// How often a worker asks `XAUTOCLAIM` for an entry whose lease lapsed (a Redis worker has no
/// view of the leases and must ask). The delay between a lease lapsing and its takeover is at
/// most this.
pub const RECLAIM_EVERY_MS: u64 = 100;
/// Longest wait for a reply. A stalled worker reads its replies late; the client's default
/// (500 ms) would turn that into an error instead of the late reply the stall is about.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);
/// Stream field of the task id.
const TASK_ID_FIELD: &str = "task_id";
/// Stream field of the payload.
const PAYLOAD_FIELD: &str = "payload";
/// The consumer group.
const GROUP: &str = "workers";

/// The keys of one run.
#[derive(Debug, Clone)]
pub struct Keys {
    /// The task stream.
    pub stream: String,
    /// Dead-lettered tasks.
    pub dead: String,
}

impl Keys {
    /// Fresh keys for a run, so a server named with `--redis-url` keeps what else it holds.
    pub fn fresh() -> Self {
        let run = Uuid::new_v4().simple();
        Self {
            stream: format!("booblik-load:{run}:tasks"),
            dead: format!("booblik-load:{run}:dead"),
        }
    }
}

async fn connect(url: &str) -> anyhow::Result<MultiplexedConnection> {
    let client = redis::Client::open(url).with_context(|| format!("redis URL {url}"))?;
    let config = AsyncConnectionConfig::new().set_response_timeout(Some(RESPONSE_TIMEOUT));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .with_context(|| format!("connecting to {url}"))
}

/// Waits until the server answers `PING`.
pub async fn wait_ready(url: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + super::server::SERVER_START_LIMIT;
    loop {
        let attempt = async {
            let mut conn = connect(url).await?;
            redis::cmd("PING")
                .query_async::<String>(&mut conn)
                .await
                .context("PING")
        };
        match attempt.await {
            Ok(_) => return Ok(()),
            Err(error) if Instant::now() >= deadline => return Err(error),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// Prepares a run: the persistence the peer's name promises (also on a named server), an empty
/// stream and its group.
pub async fn prepare(url: &str, keys: &Keys, aof_fsync_always: bool) -> anyhow::Result<()> {
    let mut conn = connect(url).await?;
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("appendonly")
        .arg(if aof_fsync_always { "yes" } else { "no" })
        .arg("appendfsync")
        .arg("always")
        .query_async::<()>(&mut conn)
        .await
        .context("CONFIG SET appendonly")?;
    redis::cmd("XGROUP")
        .arg("CREATE")
        .arg(&keys.stream)
        .arg(GROUP)
        .arg("$")
        .arg("MKSTREAM")
        .query_async::<()>(&mut conn)
        .await
        .context("XGROUP CREATE")?;
    Ok(())
}

/// Deletes a run's keys.
pub async fn clean_up(url: &str, keys: &Keys) -> anyhow::Result<()> {
    let mut conn = connect(url).await?;
    redis::cmd("DEL")
        .arg(&keys.stream)
        .arg(&keys.dead)
        .query_async::<()>(&mut conn)
        .await
        .context("DEL")
}

/// A submitter: `XADD` per task.
#[derive(Debug)]
pub struct Submitter {
    conn: MultiplexedConnection,
    keys: Keys,
}

impl Submitter {
    /// Connects.
    pub async fn connect(url: &str, keys: &Keys) -> anyhow::Result<Self> {
        Ok(Self {
            conn: connect(url).await?,
            keys: keys.clone(),
        })
    }

    /// Appends one task.
    pub async fn submit(&mut self, task_id: Uuid, payload: &[u8]) -> anyhow::Result<()> {
        redis::cmd("XADD")
            .arg(&self.keys.stream)
            .arg("*")
            .arg(TASK_ID_FIELD)
            .arg(task_id.to_string())
            .arg(PAYLOAD_FIELD)
            .arg(payload)
            .query_async::<String>(&mut self.conn)
            .await
            .context("XADD")?;
        Ok(())
    }

    /// Appends a backlog's tasks in one pipeline: one round trip for the lot. (The backlog is
    /// enqueued before the workers start, so this shortens the run, not what it measures.)
    pub async fn submit_batch(&mut self, tasks: &[(Uuid, Vec<u8>)]) -> anyhow::Result<()> {
        let mut pipe = redis::pipe();
        for (task_id, payload) in tasks {
            pipe.cmd("XADD")
                .arg(&self.keys.stream)
                .arg("*")
                .arg(TASK_ID_FIELD)
                .arg(task_id.to_string())
                .arg(PAYLOAD_FIELD)
                .arg(payload.as_slice());
        }
        pipe.query_async::<Vec<String>>(&mut self.conn)
            .await
            .context("XADD pipeline")?;
        Ok(())
    }

    /// `(acknowledged, dead-lettered)` at the end of a run: tasks no longer pending and not dead,
    /// from the server. The whole stream was read by the group (the driver checks), so an entry
    /// is acknowledged exactly when it is not pending.
    pub async fn final_counts(&mut self, tasks: u64) -> anyhow::Result<(u64, u64)> {
        let pending: (u64, Option<String>, Option<String>, redis::Value) = redis::cmd("XPENDING")
            .arg(&self.keys.stream)
            .arg(GROUP)
            .query_async(&mut self.conn)
            .await
            .context("XPENDING")?;
        let dead: u64 = redis::cmd("XLEN")
            .arg(&self.keys.dead)
            .query_async(&mut self.conn)
            .await
            .context("XLEN dead")?;
        let length: u64 = redis::cmd("XLEN")
            .arg(&self.keys.stream)
            .query_async(&mut self.conn)
            .await
            .context("XLEN")?;
        anyhow::ensure!(
            length == tasks,
            "the stream holds {length} entries, not {tasks}"
        );
        Ok((tasks.saturating_sub(pending.0).saturating_sub(dead), dead))
    }
}

/// One worker's consumer.
#[derive(Debug)]
pub struct Consumer {
    conn: MultiplexedConnection,
    keys: Keys,
    name: String,
    lease_ms: u64,
    max_deliveries: u64,
    next_reclaim: Instant,
}

impl Consumer {
    /// Connects as consumer `name`.
    pub async fn connect(
        url: &str,
        keys: &Keys,
        name: String,
        lease_ms: u64,
        max_expired_leases: u64,
    ) -> anyhow::Result<Self> {
        Ok(Self {
            conn: connect(url).await?,
            keys: keys.clone(),
            name,
            lease_ms,
            max_deliveries: max_expired_leases,
            next_reclaim: Instant::now(),
        })
    }

    /// A claim: first, every [`RECLAIM_EVERY_MS`], an entry whose lease lapsed
    /// (`XAUTOCLAIM`); else a new entry (`XREADGROUP`), waiting for one up to `IDLE_WAIT_MS` if
    /// `block`.
    pub async fn claim(&mut self, block: bool) -> anyhow::Result<ClaimOutcome> {
        if Instant::now() >= self.next_reclaim {
            self.next_reclaim = Instant::now() + Duration::from_millis(RECLAIM_EVERY_MS);
            if let Some(outcome) = self.reclaim().await? {
                return Ok(outcome);
            }
        }
        let mut command = redis::cmd("XREADGROUP");
        command
            .arg("GROUP")
            .arg(GROUP)
            .arg(&self.name)
            .arg("COUNT")
            .arg(1);
        if block {
            command.arg("BLOCK").arg(IDLE_WAIT_MS);
        }
        command.arg("STREAMS").arg(&self.keys.stream).arg(">");
        let reply: Option<StreamReadReply> = command
            .query_async(&mut self.conn)
            .await
            .context("XREADGROUP")?;
        let entry = reply.and_then(|r| r.keys.into_iter().next()?.ids.into_iter().next());
        match entry {
            Some(entry) => Ok(ClaimOutcome::Won(claimed(&entry, 1, false)?)),
            None => Ok(ClaimOutcome::Empty),
        }
    }

    async fn reclaim(&mut self) -> anyhow::Result<Option<ClaimOutcome>> {
        let reply: StreamAutoClaimReply = redis::cmd("XAUTOCLAIM")
            .arg(&self.keys.stream)
            .arg(GROUP)
            .arg(&self.name)
            .arg(self.lease_ms)
            .arg("0-0")
            .arg("COUNT")
            .arg(1)
            .query_async(&mut self.conn)
            .await
            .context("XAUTOCLAIM")?;
        let Some(entry) = reply.claimed.into_iter().next() else {
            return Ok(None);
        };
        let pending: StreamPendingCountReply = redis::cmd("XPENDING")
            .arg(&self.keys.stream)
            .arg(GROUP)
            .arg(&entry.id)
            .arg(&entry.id)
            .arg(1)
            .query_async(&mut self.conn)
            .await
            .context("XPENDING of a reclaimed entry")?;
        let deliveries = pending.ids.first().map_or(1, |p| p.times_delivered as u64);
        let claimed = claimed(&entry, deliveries as i64, true)?;
        if deliveries > self.max_deliveries {
            redis::cmd("XACK")
                .arg(&self.keys.stream)
                .arg(GROUP)
                .arg(&entry.id)
                .query_async::<u64>(&mut self.conn)
                .await
                .context("XACK of a dead letter")?;
            redis::cmd("XADD")
                .arg(&self.keys.dead)
                .arg("*")
                .arg(TASK_ID_FIELD)
                .arg(claimed.task_id.to_string())
                .query_async::<String>(&mut self.conn)
                .await
                .context("XADD dead letter")?;
            return Ok(Some(ClaimOutcome::DeadLettered(claimed.task_id)));
        }
        Ok(Some(ClaimOutcome::Won(claimed)))
    }

    /// Resets the entry's idle time (`XCLAIM … JUSTID` to itself). True if the entry was still
    /// pending — which says nothing about who held it meanwhile.
    pub async fn extend(&mut self, claimed: &Claimed) -> anyhow::Result<bool> {
        let ids: Vec<String> = redis::cmd("XCLAIM")
            .arg(&self.keys.stream)
            .arg(GROUP)
            .arg(&self.name)
            .arg(0)
            .arg(&claimed.handle)
            .arg("JUSTID")
            .query_async(&mut self.conn)
            .await
            .context("XCLAIM (extend)")?;
        Ok(!ids.is_empty())
    }

    /// A done and the next claim in one round trip: `XACK` and `XREADGROUP` in one pipeline,
    /// which Redis applies in order and, with `appendfsync always`, fsyncs once before
    /// replying to both. When the `XAUTOCLAIM` of [`claim`](Self::claim) is due, the two go one
    /// after the other instead.
    pub async fn done_and_claim(
        &mut self,
        finished: &Claimed,
    ) -> anyhow::Result<(bool, ClaimOutcome)> {
        if Instant::now() >= self.next_reclaim {
            let accepted = self.done(finished).await?;
            return Ok((accepted, self.claim(false).await?));
        }
        let (acked, reply): (u64, Option<StreamReadReply>) = redis::pipe()
            .cmd("XACK")
            .arg(&self.keys.stream)
            .arg(GROUP)
            .arg(&finished.handle)
            .cmd("XREADGROUP")
            .arg("GROUP")
            .arg(GROUP)
            .arg(&self.name)
            .arg("COUNT")
            .arg(1)
            .arg("STREAMS")
            .arg(&self.keys.stream)
            .arg(">")
            .query_async(&mut self.conn)
            .await
            .context("XACK + XREADGROUP")?;
        let entry = reply.and_then(|r| r.keys.into_iter().next()?.ids.into_iter().next());
        let outcome = match entry {
            Some(entry) => ClaimOutcome::Won(claimed(&entry, 1, false)?),
            None => ClaimOutcome::Empty,
        };
        Ok((acked == 1, outcome))
    }

    /// `XACK`: true if the entry was still pending.
    pub async fn done(&mut self, claimed: &Claimed) -> anyhow::Result<bool> {
        let acked: u64 = redis::cmd("XACK")
            .arg(&self.keys.stream)
            .arg(GROUP)
            .arg(&claimed.handle)
            .query_async(&mut self.conn)
            .await
            .context("XACK")?;
        Ok(acked == 1)
    }
}

fn claimed(entry: &StreamId, token: i64, reclaimed: bool) -> anyhow::Result<Claimed> {
    let task_id: String = entry
        .get(TASK_ID_FIELD)
        .with_context(|| format!("entry {} has no {TASK_ID_FIELD}", entry.id))?;
    let payload: Vec<u8> = entry.get(PAYLOAD_FIELD).unwrap_or_default();
    Ok(Claimed {
        task_id: task_id.parse().context("a task id")?,
        token,
        payload,
        handle: entry.id.clone(),
        reclaimed,
    })
}
