//! The JetStream work queue: one work-queue stream of tasks (R3 on a 3-node cluster), one
//! durable pull consumer shared by every worker — JetStream's own answer to "a task queue".
//!
//! | step | JetStream |
//! |---|---|
//! | claim | a pull of one message from the shared consumer (`fetch`, or a pull with an expiry of [`IDLE_WAIT_MS`] for an idle worker) |
//! | lease | the consumer's `AckWait` (= the run's lease) |
//! | extend | `+WPI` ("work in progress") to the message's reply subject: resets its `AckWait` |
//! | done | `+ACK` with a reply (a double ack): the server confirms it, and the work-queue stream removes the message |
//! | lease expiry | the server redelivers an unacknowledged message after `AckWait` to whichever worker pulls next |
//! | dead letter | a delivery count (`delivered`, from the message's metadata) above `max_expired_leases`: the worker acknowledges it and publishes its id to a dead stream (the same rule as the Redis peer; `MaxDeliver` alone would leave the message in the stream, silently) |
//!
//! The token of a claim is the delivery count. No receiver can check it: JetStream accepts an
//! acknowledgement for an earlier delivery of a message that was redelivered meanwhile
//! (nats-server issues 4786 and 6937, both open), so a worker that stalled past its `AckWait`
//! still acknowledges — and its effect lands a second time. The stall chaos shows it.

use std::time::Duration;

use anyhow::Context;
use async_nats::jetstream::{self, consumer, stream};
use booblik_samples::engine::JetStreamEngine;
use booblik_samples::support::nats_cluster::NatsCluster;
use bytes::Bytes;
use futures::StreamExt;
use uuid::Uuid;

use super::driver::{ClaimOutcome, Claimed, IDLE_WAIT_MS};

/// The durable consumer every worker pulls from.
const CONSUMER: &str = "workers";
/// Longest wait for the server's answer to an ack, extend or publish. A stalled worker sends its
/// late ack after its freeze; the answer itself is prompt.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Replicas of the run's streams: R3, JetStream's answer to losing a node.
pub const REPLICAS: usize = 3;

/// The names of one run.
#[derive(Debug, Clone)]
pub struct Names {
    /// The work-queue stream.
    pub stream: String,
    /// Its subject.
    pub subject: String,
    /// The dead-letter stream.
    pub dead_stream: String,
    /// Its subject.
    pub dead_subject: String,
}

impl Names {
    /// Fresh names for a run, so a cluster named with `--nats-url` keeps what else it holds.
    pub fn fresh() -> Self {
        let run = Uuid::new_v4().simple().to_string();
        Self {
            stream: format!("BOOBLIK-LOAD-{run}"),
            subject: format!("booblik-load.{run}.tasks"),
            dead_stream: format!("BOOBLIK-LOAD-{run}-DEAD"),
            dead_subject: format!("booblik-load.{run}.dead"),
        }
    }
}

/// Starts a 3-node cluster under `data_parent` from the installed `nats-server`.
pub fn start_cluster(
    data_parent: &std::path::Path,
) -> anyhow::Result<(NatsCluster, tempfile::TempDir)> {
    let dir = tempfile::Builder::new()
        .prefix("nats-peer-")
        .tempdir_in(data_parent)
        .context("a directory for the NATS cluster")?;
    let cluster = NatsCluster::start(dir.path(), 3)?;
    Ok((cluster, dir))
}

async fn connect(url: &str) -> anyhow::Result<jetstream::Context> {
    let urls: Vec<&str> = url.split(',').collect();
    let client = async_nats::ConnectOptions::new()
        .request_timeout(Some(REQUEST_TIMEOUT))
        .connect(urls.as_slice())
        .await
        .with_context(|| format!("connecting to {url}"))?;
    Ok(jetstream::new(client))
}

/// Waits until JetStream answers (the cluster has elected its meta leader): the samples'
/// engine's own readiness probe.
pub async fn wait_ready(url: &str) -> anyhow::Result<()> {
    let urls: Vec<String> = url.split(',').map(str::to_owned).collect();
    let engine = JetStreamEngine::connect(&urls).await?;
    engine
        .wait_ready(super::server::SERVER_START_LIMIT)
        .await
        .with_context(|| format!("JetStream at {url}"))
}

/// Prepares a run: the work-queue stream, its consumer (`AckWait` = `lease_ms`) and the dead
/// stream.
pub async fn prepare(url: &str, names: &Names, lease_ms: u64) -> anyhow::Result<()> {
    let context = connect(url).await?;
    let tasks = context
        .create_stream(stream::Config {
            name: names.stream.clone(),
            subjects: vec![names.subject.clone()],
            retention: stream::RetentionPolicy::WorkQueue,
            storage: stream::StorageType::File,
            num_replicas: REPLICAS,
            ..Default::default()
        })
        .await
        .context("creating the work-queue stream")?;
    context
        .create_stream(stream::Config {
            name: names.dead_stream.clone(),
            subjects: vec![names.dead_subject.clone()],
            storage: stream::StorageType::File,
            num_replicas: REPLICAS,
            ..Default::default()
        })
        .await
        .context("creating the dead-letter stream")?;
    tasks
        .create_consumer(consumer::pull::Config {
            durable_name: Some(CONSUMER.into()),
            ack_policy: consumer::AckPolicy::Explicit,
            ack_wait: Duration::from_millis(lease_ms),
            // Unbounded: the dead letter is the workers' rule (module docs).
            max_deliver: -1,
            max_ack_pending: -1,
            ..Default::default()
        })
        .await
        .context("creating the shared consumer")?;
    Ok(())
}

/// Deletes a run's streams.
pub async fn clean_up(url: &str, names: &Names) -> anyhow::Result<()> {
    let context = connect(url).await?;
    for stream in [&names.stream, &names.dead_stream] {
        context
            .delete_stream(stream)
            .await
            .with_context(|| format!("deleting {stream}"))?;
    }
    Ok(())
}

/// A submitter: one publish per task, its PubAck awaited.
#[derive(Debug)]
pub struct Submitter {
    context: jetstream::Context,
    names: Names,
}

impl Submitter {
    /// Connects.
    pub async fn connect(url: &str, names: &Names) -> anyhow::Result<Self> {
        Ok(Self {
            context: connect(url).await?,
            names: names.clone(),
        })
    }

    /// Publishes one task: its id (16 bytes), then its payload.
    pub async fn submit(&mut self, task_id: Uuid, payload: &[u8]) -> anyhow::Result<()> {
        let mut body = Vec::with_capacity(16 + payload.len());
        body.extend_from_slice(task_id.as_bytes());
        body.extend_from_slice(payload);
        self.context
            .publish(self.names.subject.clone(), Bytes::from(body))
            .await
            .context("publish")?
            .await
            .context("PubAck")?;
        Ok(())
    }

    /// Publishes a backlog's tasks, every PubAck awaited after the last publish. (The backlog
    /// is enqueued before the workers start, so this shortens the run, not what it measures.)
    pub async fn submit_batch(&mut self, tasks: &[(Uuid, Vec<u8>)]) -> anyhow::Result<()> {
        let mut acks = Vec::with_capacity(tasks.len());
        for (task_id, payload) in tasks {
            let mut body = Vec::with_capacity(16 + payload.len());
            body.extend_from_slice(task_id.as_bytes());
            body.extend_from_slice(payload);
            acks.push(
                self.context
                    .publish(self.names.subject.clone(), Bytes::from(body))
                    .await
                    .context("publish")?,
            );
        }
        for ack in acks {
            ack.await.context("PubAck")?;
        }
        Ok(())
    }

    /// `(acknowledged, dead-lettered)` at the end of a run, from the server: the work-queue
    /// stream still holds exactly the unacknowledged tasks.
    pub async fn final_counts(&mut self, tasks: u64) -> anyhow::Result<(u64, u64)> {
        let remaining = self
            .context
            .get_stream(&self.names.stream)
            .await?
            .get_info()
            .await
            .context("stream info")?
            .state
            .messages;
        let dead = self
            .context
            .get_stream(&self.names.dead_stream)
            .await?
            .get_info()
            .await
            .context("dead stream info")?
            .state
            .messages;
        Ok((tasks.saturating_sub(remaining).saturating_sub(dead), dead))
    }
}

/// One worker's view of the shared consumer, on its own connection.
#[derive(Debug)]
pub struct Consumer {
    context: jetstream::Context,
    pull: consumer::PullConsumer,
    names: Names,
    max_deliveries: u64,
}

impl Consumer {
    /// Connects.
    pub async fn connect(
        url: &str,
        names: &Names,
        max_expired_leases: u64,
    ) -> anyhow::Result<Self> {
        let context = connect(url).await?;
        let consumer: consumer::PullConsumer = context
            .get_stream(&names.stream)
            .await?
            .get_consumer(CONSUMER)
            .await
            .map_err(|error| anyhow::anyhow!("the shared consumer: {error}"))?;
        Ok(Self {
            context,
            pull: consumer,
            names: names.clone(),
            max_deliveries: max_expired_leases,
        })
    }

    /// A claim: one message, waiting up to [`IDLE_WAIT_MS`] for one if `block`.
    pub async fn claim(&mut self, block: bool) -> anyhow::Result<ClaimOutcome> {
        let mut messages = if block {
            self.pull
                .batch()
                .max_messages(1)
                .expires(Duration::from_millis(IDLE_WAIT_MS))
                .messages()
                .await
                .context("pull")?
        } else {
            self.pull
                .fetch()
                .max_messages(1)
                .messages()
                .await
                .context("fetch")?
        };
        let Some(message) = messages.next().await else {
            return Ok(ClaimOutcome::Empty);
        };
        let message = message.map_err(|error| anyhow::anyhow!("pull: {error}"))?;
        let delivered = message
            .info()
            .map_err(|error| anyhow::anyhow!("message metadata: {error}"))?
            .delivered as u64;
        let reply = message
            .message
            .reply
            .as_ref()
            .context("a pulled message without a reply subject")?
            .to_string();
        let body = &message.message.payload;
        anyhow::ensure!(body.len() >= 16, "a task message of {} bytes", body.len());
        let task_id = Uuid::from_slice(&body[..16]).context("a task id")?;
        let claimed = Claimed {
            task_id,
            token: delivered as i64,
            payload: body[16..].to_vec(),
            handle: reply,
            reclaimed: delivered > 1,
        };
        if delivered > self.max_deliveries {
            self.ack(&claimed.handle, "+ACK")
                .await
                .context("ack of a dead letter")?;
            self.context
                .publish(
                    self.names.dead_subject.clone(),
                    Bytes::copy_from_slice(task_id.as_bytes()),
                )
                .await?
                .await
                .context("dead letter")?;
            return Ok(ClaimOutcome::DeadLettered(task_id));
        }
        Ok(ClaimOutcome::Won(claimed))
    }

    /// `+WPI`: true if the server confirmed it — which says nothing about whether the lease had
    /// already lapsed and the message gone to another worker.
    pub async fn extend(&mut self, claimed: &Claimed) -> anyhow::Result<bool> {
        Ok(self.ack(&claimed.handle, "+WPI").await.is_ok())
    }

    /// A done and the next claim in one round trip: the double ack and the fetch of the next
    /// message are sent together, and their answers awaited together.
    pub async fn done_and_claim(
        &mut self,
        finished: &Claimed,
    ) -> anyhow::Result<(bool, ClaimOutcome)> {
        let client = self.context.client();
        let ack = client.request(finished.handle.clone(), Bytes::from_static(b"+ACK"));
        let (acked, outcome) = tokio::join!(ack, self.claim(false));
        Ok((acked.is_ok(), outcome?))
    }

    /// A double ack: true if the server confirmed it.
    pub async fn done(&mut self, claimed: &Claimed) -> anyhow::Result<bool> {
        Ok(self.ack(&claimed.handle, "+ACK").await.is_ok())
    }

    async fn ack(&self, reply: &str, kind: &'static str) -> anyhow::Result<()> {
        self.context
            .client()
            .request(reply.to_owned(), Bytes::from_static(kind.as_bytes()))
            .await
            .with_context(|| format!("{kind} to {reply}"))?;
        Ok(())
    }
}
