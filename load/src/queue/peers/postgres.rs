//! The PostgreSQL queue: one table, claimed with `FOR UPDATE SKIP LOCKED`.
//!
//! A claim is one autocommit `UPDATE` of the oldest row that is ready or whose lease lapsed,
//! skipping rows other claims have locked, so two workers never wait for each other and never
//! get the same row. The `attempts` column counts winning claims and is the row's token: the done
//! and the extend name it, so a displaced holder's done or extend matches no row. The external
//! effect has no such check (see [`super::super::effects`]).

use std::time::{Duration, Instant};

use anyhow::Context;
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, Client, NoTls, Statement};
use uuid::Uuid;

use super::driver::{ClaimOutcome, Claimed, IDLE_WAIT_MS};

/// The table of one run (dropped and created again by every run).
const TABLE: &str = "booblik_load_jobs";
/// The channel the submitter notifies on every insert, and idle workers listen to.
const CHANNEL: &str = "booblik_load_jobs";

async fn connect(
    url: &str,
    synchronous_commit: bool,
) -> anyhow::Result<(Client, mpsc::UnboundedReceiver<()>)> {
    let (client, mut connection) = tokio_postgres::connect(url, NoTls)
        .await
        .with_context(|| format!("connecting to {url}"))?;
    let (notify_tx, notify_rx) = mpsc::unbounded_channel();
    // The connection delivers notifications only to whoever polls its messages.
    tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(_)) => {
                    let _ = notify_tx.send(());
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::debug!(%error, "postgres connection ended");
                    break;
                }
            }
        }
    });
    // Also set per session, so a server named with --postgres-url keeps the peer's promise.
    client
        .batch_execute(&format!(
            "SET synchronous_commit TO {}",
            if synchronous_commit { "on" } else { "off" }
        ))
        .await
        .context("SET synchronous_commit")?;
    Ok((client, notify_rx))
}

/// Waits until the server accepts a connection.
pub async fn wait_ready(url: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + super::server::SERVER_START_LIMIT;
    loop {
        match connect(url, true).await {
            Ok(_) => return Ok(()),
            Err(error) if Instant::now() >= deadline => return Err(error),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Prepares a run: a fresh table.
pub async fn prepare(url: &str) -> anyhow::Result<()> {
    let (client, _) = connect(url, true).await?;
    client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {TABLE};
             CREATE TABLE {TABLE} (
                 id bigserial PRIMARY KEY,
                 task_id uuid NOT NULL,
                 payload bytea NOT NULL,
                 state text NOT NULL DEFAULT 'ready',
                 worker uuid,
                 lease_until timestamptz,
                 attempts integer NOT NULL DEFAULT 0
             );
             CREATE INDEX {TABLE}_open ON {TABLE} (id) WHERE state IN ('ready', 'leased');"
        ))
        .await
        .context("creating the jobs table")
}

/// Drops a run's table.
pub async fn clean_up(url: &str) -> anyhow::Result<()> {
    let (client, _) = connect(url, true).await?;
    client
        .batch_execute(&format!("DROP TABLE IF EXISTS {TABLE}"))
        .await
        .context("dropping the jobs table")
}

/// A submitter: one `INSERT` per task, which notifies the idle workers in the same statement.
#[derive(Debug)]
pub struct Submitter {
    client: Client,
    insert: Statement,
}

impl Submitter {
    /// Connects.
    pub async fn connect(url: &str, synchronous_commit: bool) -> anyhow::Result<Self> {
        let (client, _) = connect(url, synchronous_commit).await?;
        let insert = client
            .prepare(&format!(
                "WITH inserted AS (INSERT INTO {TABLE} (task_id, payload) VALUES ($1, $2) RETURNING id)
                 SELECT pg_notify('{CHANNEL}', '') FROM inserted"
            ))
            .await
            .context("preparing the insert")?;
        Ok(Self { client, insert })
    }

    /// Inserts one task.
    pub async fn submit(&mut self, task_id: Uuid, payload: &[u8]) -> anyhow::Result<()> {
        self.client
            .execute(&self.insert, &[&task_id, &payload])
            .await
            .context("INSERT")?;
        Ok(())
    }

    /// Inserts a backlog's tasks in one transaction, the inserts pipelined on the connection:
    /// one commit (one WAL flush) for the lot. (The backlog is enqueued before the workers
    /// start, so this shortens the run, not what it measures.)
    pub async fn submit_batch(&mut self, tasks: &[(Uuid, Vec<u8>)]) -> anyhow::Result<()> {
        self.client.batch_execute("BEGIN").await.context("BEGIN")?;
        let (client, insert) = (&self.client, &self.insert);
        let inserts = tasks.iter().map(|(task_id, payload)| async move {
            let payload: &[u8] = payload;
            client.execute(insert, &[task_id, &payload]).await
        });
        futures::future::try_join_all(inserts)
            .await
            .context("INSERT")?;
        self.client
            .batch_execute("COMMIT")
            .await
            .context("COMMIT")?;
        Ok(())
    }

    /// `(done, dead-lettered)` at the end of a run, from the table.
    pub async fn final_counts(&mut self, tasks: u64) -> anyhow::Result<(u64, u64)> {
        let row = self
            .client
            .query_one(
                &format!(
                    "SELECT count(*) FILTER (WHERE state = 'done'),
                            count(*) FILTER (WHERE state = 'dead'),
                            count(*)
                     FROM {TABLE}"
                ),
                &[],
            )
            .await
            .context("counting the jobs")?;
        let (done, dead, all): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
        anyhow::ensure!(
            all as u64 == tasks,
            "the table holds {all} rows, not {tasks}"
        );
        Ok((done as u64, dead as u64))
    }
}

/// One worker's connection.
#[derive(Debug)]
pub struct Consumer {
    client: Client,
    notified: mpsc::UnboundedReceiver<()>,
    worker: Uuid,
    lease_s: f64,
    max_attempts: i32,
    claim: Statement,
    extend: Statement,
    done: Statement,
    done_and_claim: Statement,
}

impl Consumer {
    /// Connects as `worker` and listens for new tasks.
    pub async fn connect(
        url: &str,
        synchronous_commit: bool,
        worker: Uuid,
        lease_ms: u64,
        max_expired_leases: u64,
    ) -> anyhow::Result<Self> {
        let (client, notified) = connect(url, synchronous_commit).await?;
        client
            .batch_execute(&format!("LISTEN {CHANNEL}"))
            .await
            .context("LISTEN")?;
        let claim = client
            .prepare(&claim_sql(""))
            .await
            .context("preparing the claim")?;
        let extend = client
            .prepare(&format!(
                "UPDATE {TABLE} SET lease_until = now() + make_interval(secs => $4)
                 WHERE id = $1 AND worker = $2 AND attempts = $3 AND state = 'leased'
                   AND lease_until > now()"
            ))
            .await
            .context("preparing the extend")?;
        let done = client
            .prepare(&format!(
                "UPDATE {TABLE} SET state = 'done', lease_until = NULL
                 WHERE id = $1 AND worker = $2 AND attempts = $3 AND state = 'leased'"
            ))
            .await
            .context("preparing the done")?;
        // The done and the next claim as one statement, so one transaction and one commit
        // (one WAL flush). Both see one snapshot. The claim must not pick the row being marked
        // done (`id <> $4`): were its lease lapsed, the claim's `lease_until < now()` would
        // match it, and two updates of one row in one statement keep only one. The outer join
        // gives one row even when the claim finds nothing. Parameters: $1 worker, $2 lease (s),
        // $3 max attempts (as in the claim), $4 the finished row's id, $5 its token.
        //
        // The done runs first: the claim's candidates wait for it (`FROM done` in their
        // filter). `FOR UPDATE SKIP LOCKED` keeps the lock on a row it locked and then found
        // no longer matching (another worker's row, leased since this statement's snapshot),
        // until the transaction ends; so a claim that ran before its own done held such a lock
        // while the done waited for another worker's row, and two workers doing that to each
        // other's rows deadlocked (PostgreSQL aborted one: seen at 30 workers with no work).
        // With the done first, a transaction waits only before it holds any lock.
        let done_and_claim = client
            .prepare(&format!(
                "WITH done AS (
                     UPDATE {TABLE} SET state = 'done', lease_until = NULL
                     WHERE id = $4 AND worker = $1 AND attempts = $5 AND state = 'leased'
                     RETURNING 1),
                 claimed AS ({})
                 SELECT (SELECT count(*) FROM done), c.id, c.task_id, c.payload, c.state, c.attempts
                 FROM (SELECT 1) AS one LEFT JOIN claimed AS c ON true",
                claim_sql("AND id <> $4 AND (SELECT count(*) FROM done) >= 0")
            ))
            .await
            .context("preparing the done-and-claim")?;
        Ok(Self {
            client,
            notified,
            worker,
            lease_s: lease_ms as f64 / 1_000.0,
            max_attempts: i32::try_from(max_expired_leases).unwrap_or(i32::MAX),
            claim,
            extend,
            done,
            done_and_claim,
        })
    }

    /// One claim query.
    pub async fn claim(&mut self) -> anyhow::Result<ClaimOutcome> {
        let row = self
            .client
            .query_opt(
                &self.claim,
                &[&self.worker, &self.lease_s, &self.max_attempts],
            )
            .await
            .context("claim")?;
        match row {
            Some(row) => Ok(claimed(&row, 0)),
            None => Ok(ClaimOutcome::Empty),
        }
    }

    /// A done and the next claim in one statement: one round trip, one commit.
    pub async fn done_and_claim(
        &mut self,
        finished: &Claimed,
    ) -> anyhow::Result<(bool, ClaimOutcome)> {
        let id = Self::row_id(finished)?;
        let token = i32::try_from(finished.token).context("token")?;
        let row = self
            .client
            .query_one(
                &self.done_and_claim,
                &[&self.worker, &self.lease_s, &self.max_attempts, &id, &token],
            )
            .await
            .context("done and claim")?;
        let accepted = row.get::<_, i64>(0) == 1;
        let outcome = if row.get::<_, Option<i64>>(1).is_some() {
            claimed(&row, 1)
        } else {
            ClaimOutcome::Empty
        };
        Ok((accepted, outcome))
    }

    /// Waits for a notification of a new task, at most `IDLE_WAIT_MS` (lapsed leases notify
    /// nobody).
    pub async fn wait_for_work(&mut self) {
        let _ =
            tokio::time::timeout(Duration::from_millis(IDLE_WAIT_MS), self.notified.recv()).await;
        // One claim serves every notification that arrived meanwhile: the next claims find
        // any further rows before the worker waits again.
        while self.notified.try_recv().is_ok() {}
    }

    fn row_id(claimed: &Claimed) -> anyhow::Result<i64> {
        claimed.handle.parse().context("a row id")
    }

    /// Renews the lease if this worker still holds it under its token and it has not lapsed.
    pub async fn extend(&mut self, claimed: &Claimed) -> anyhow::Result<bool> {
        let id = Self::row_id(claimed)?;
        let token = i32::try_from(claimed.token).context("token")?;
        let rows = self
            .client
            .execute(&self.extend, &[&id, &self.worker, &token, &self.lease_s])
            .await
            .context("extend")?;
        Ok(rows == 1)
    }

    /// Marks the row done if this worker still holds it under its token.
    pub async fn done(&mut self, claimed: &Claimed) -> anyhow::Result<bool> {
        let id = Self::row_id(claimed)?;
        let token = i32::try_from(claimed.token).context("token")?;
        let rows = self
            .client
            .execute(&self.done, &[&id, &self.worker, &token])
            .await
            .context("done")?;
        Ok(rows == 1)
    }
}

/// The claim statement: one row that is ready, or leased with its lease lapsed, taken by
/// worker `$1` for `$2` seconds; a row that lapsed `$3` times is dead-lettered instead (the same
/// rule as booblik's verdict: at most that many winning claims). `also` narrows the candidates.
fn claim_sql(also: &str) -> String {
    format!(
        "UPDATE {TABLE} SET
             state = CASE WHEN attempts >= $3 THEN 'dead' ELSE 'leased' END,
             worker = $1,
             lease_until = now() + make_interval(secs => $2),
             attempts = attempts + CASE WHEN attempts >= $3 THEN 0 ELSE 1 END
         WHERE id = (
             SELECT id FROM {TABLE}
             WHERE (state = 'ready' OR (state = 'leased' AND lease_until < now())) {also}
             ORDER BY id
             FOR UPDATE SKIP LOCKED
             LIMIT 1)
         RETURNING id, task_id, payload, state, attempts"
    )
}

/// The claim in `row`'s columns from `first` on: id, task id, payload, state, attempts.
fn claimed(row: &tokio_postgres::Row, first: usize) -> ClaimOutcome {
    let id: i64 = row.get(first);
    let task_id: Uuid = row.get(first + 1);
    let state: &str = row.get(first + 3);
    let attempts: i32 = row.get(first + 4);
    if state == "dead" {
        return ClaimOutcome::DeadLettered(task_id);
    }
    ClaimOutcome::Won(Claimed {
        task_id,
        token: i64::from(attempts),
        payload: row.get(first + 2),
        handle: id.to_string(),
        reclaimed: attempts > 1,
    })
}
