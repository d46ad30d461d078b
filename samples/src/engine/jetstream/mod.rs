//! The JetStream engine: a booblik topic partition is one JetStream stream ([`naming`]), its
//! offset the stream sequence (from 1), replicated over the stream's RAFT group.
//!
//! * **append**: one publish per record, all sent before any PubAck is awaited (a pipeline),
//!   then every PubAck awaited. JetStream 2.9 has no atomic batch, so another writer's records
//!   may fall between ours: [`Appended::offsets`] lists each record's sequence.
//! * **read**: an ephemeral pull consumer (`DeliverPolicy::ByStartSequence`, `AckPolicy::None`,
//!   memory state, R1) is the cursor; a no-wait fetch with an expiry is the long poll (answered
//!   once something is delivered and nothing more is there, or at the expiry), a no-wait fetch
//!   without one a read with no wait. The cursor is kept
//!   while reads go on where the last one ended, and every delivered sequence is checked against
//!   the one expected: a skipped or repeated sequence (a read abandoned mid-fetch, a consumer
//!   lost in a failover) drops the cursor and opens a new one at the right place, so a reader
//!   never skips a record.
//! * **bounds**: stream info. `origin` is 1.
//! * **reconnects**: the NATS client's `Disconnected` events.
//!
//! Every API request (stream info, creating a cursor, …) is bounded by [`API_REQUEST_TIMEOUT`]
//! and sent again up to [`API_ATTEMPTS`] times, every pull by its expiry and [`PULL_GRACE`]:
//! after a node is SIGKILLed, requests that would go to it get no answer, not an error.

pub mod naming;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};
use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use tokio::sync::Mutex;

use super::{
    Ack, Appended, Bounds, EngineError, EngineKind, LogEngine, LogRecord, PartitionLog,
    PartitionName, ReadBatch, ReadLimits, check_limits,
};

/// The first sequence of every stream.
pub const ORIGIN: i64 = 1;
/// How long one readiness probe of [`JetStreamEngine::wait_ready`] may take.
pub const READY_PROBE_TIMEOUT: Duration = Duration::from_millis(500);
/// How long an idle read cursor lives on the server before it cleans it up itself (a reader
/// that vanished without deleting it).
pub const CURSOR_INACTIVE_THRESHOLD: Duration = Duration::from_mins(1);
/// The shortest long poll sent to the server: a pull request with a shorter expiry is answered
/// empty at once by some servers, which would turn a follower into a busy loop.
pub const MIN_FETCH_EXPIRY: Duration = Duration::from_millis(10);

/// How long one JetStream API request (stream info, creating or deleting a cursor, listing
/// streams) may go unanswered before it is abandoned and sent again. A healthy cluster
/// answers in milliseconds (server traces, 3 nodes on 127.0.0.1: 0.2–4 ms for stream info,
/// 1–8 ms for creating a cursor). After a node is SIGKILLed some requests get no answer at all:
/// a stream's info while the stream elects a new leader, and — for as long as a traced run
/// lasted, 58 s after the kill — the creation of a cursor the meta leader placed on the dead
/// node (nats-server up to 2.11 may place an R1 consumer on a peer it has not marked offline
/// yet; nats-server#7165). The client's own limit is its 10 s request timeout, so each such
/// request cost 10 s and a follower fell 800 records behind in a 15 s demo; abandoned after this
/// limit, a new request gets a fresh placement (docs/jetstream.md, "The demo when a node dies").
pub const API_REQUEST_TIMEOUT: Duration = Duration::from_secs(1);
/// How many times one API request is sent (each bounded by [`API_REQUEST_TIMEOUT`]) before the
/// call fails as unavailable and its caller retries later, from the same position. With one
/// node of three dead, 13 of 24 creations of a cursor went to it in a traced run; three tries
/// then all fail about once in 8, and cost the caller 3 s and one retry.
pub const API_ATTEMPTS: u32 = 3;

/// How long [`JetStreamEngine::ensure_topics`] keeps asking for a stream the cluster answers
/// "no suitable peers for placement" (error code 10005). Right after a cluster starts, its meta
/// leader can answer (so [`JetStreamEngine::wait_ready`] passes) before it counts every peer as
/// current, and an R3 stream cannot be placed yet: seen once in a local `.ci/run` on
/// 2026-12-05 (the contract test of an R3 stream on a cluster just started). The peers catch up
/// within a few heartbeats; a cluster short of peers for longer really cannot place the stream.
pub const PLACEMENT_WAIT: Duration = Duration::from_secs(10);
/// Pause between two such tries.
const PLACEMENT_RETRY_PAUSE: Duration = Duration::from_millis(200);

/// How much longer than its own expiry a pull may go unanswered before the cursor is given up.
/// A pull sent to a consumer whose node was SIGKILLed can stay open with no answer and no error
/// (seen in the demo's leader-kill test: a follower stalled past the demo's catch-up limit); the
/// read then fails as unavailable, and the next one opens a new cursor.
pub const PULL_GRACE: Duration = Duration::from_secs(2);

/// How topics are laid out on the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSettings {
    /// Replicas per stream: 1 or 3 (or 5). R3 survives the loss of one node.
    pub replicas: usize,
    /// Retention by age; `None` keeps everything.
    pub max_age: Option<Duration>,
}

impl Default for StreamSettings {
    fn default() -> Self {
        Self {
            replicas: 3,
            max_age: None,
        }
    }
}

/// The JetStream engine over one NATS connection (shared by every partition it opens).
#[derive(Debug, Clone)]
pub struct JetStreamEngine {
    context: jetstream::Context,
    disconnects: Arc<AtomicU64>,
}

impl JetStreamEngine {
    /// Connects to `urls` (any node of the cluster: the client learns the others).
    pub async fn connect(urls: &[String]) -> Result<Self, EngineError> {
        let disconnects = Arc::new(AtomicU64::new(0));
        let counter = disconnects.clone();
        let client = async_nats::ConnectOptions::new()
            .retry_on_initial_connect()
            .connection_timeout(Duration::from_secs(5))
            .event_callback(move |event| {
                let counter = counter.clone();
                async move {
                    if matches!(event, async_nats::Event::Disconnected) {
                        counter.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
            .connect(urls)
            .await
            .map_err(|error| EngineError::Unavailable {
                partition: cluster(),
                reason: format!("cannot connect to {urls:?}: {error}"),
            })?;
        let context = jetstream::new(client);
        Ok(Self {
            context,
            disconnects,
        })
    }

    /// Waits until JetStream answers (a new cluster first elects its meta leader; a stream
    /// request before that fails), for at most `limit`.
    pub async fn wait_ready(&self, limit: Duration) -> Result<(), EngineError> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            // A stream listing needs the meta leader. (Account info would too, but 2.9's answer
            // does not parse in this client version.)
            // Each try is bounded: a request sent before the cluster formed can go unanswered
            // for the client's whole request timeout (5 s).
            let listing = tokio::time::timeout(READY_PROBE_TIMEOUT, async {
                self.context.stream_names().next().await.transpose()
            })
            .await;
            match listing {
                Ok(Ok(_)) => return Ok(()),
                Err(_) if tokio::time::Instant::now() >= deadline => {
                    return Err(unavailable(
                        &cluster(),
                        format!("JetStream not ready after {limit:?}"),
                    ));
                }
                Err(_) => {}
                Ok(Err(error)) if tokio::time::Instant::now() >= deadline => {
                    return Err(unavailable(
                        &cluster(),
                        format!("JetStream not ready after {limit:?}: {error}"),
                    ));
                }
                Ok(Err(_)) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// The JetStream context underneath (the experiment's work-queue peer uses it directly).
    pub fn context(&self) -> &jetstream::Context {
        &self.context
    }

    /// Creates the streams of `topics` (`(name, partitions)`) that do not exist yet. A stream
    /// that exists is left as it is — its replicas and retention are the operator's — and its
    /// subject checked, so a stream of another naming is never written into.
    pub async fn ensure_topics(
        &self,
        topics: &[(String, i32)],
        settings: &StreamSettings,
    ) -> Result<(), EngineError> {
        for (topic, partitions) in topics {
            for partition in 0..*partitions {
                let name = PartitionName {
                    topic: topic.clone(),
                    partition,
                };
                let stream =
                    naming::stream_name(topic, partition).map_err(|e| refused(&name, e))?;
                let subject = naming::subject(topic, partition).map_err(|e| refused(&name, e))?;
                let config = stream::Config {
                    name: stream.clone(),
                    subjects: vec![subject.clone()],
                    storage: stream::StorageType::File,
                    num_replicas: settings.replicas,
                    retention: stream::RetentionPolicy::Limits,
                    discard: stream::DiscardPolicy::Old,
                    max_age: settings.max_age.unwrap_or_default(),
                    allow_direct: true,
                    ..Default::default()
                };
                // Not bounded by API_REQUEST_TIMEOUT: a new R3 stream answers once its replicas
                // elected a leader, which on a loaded machine can take longer than any one read
                // should; this is setup, done once, under the client's own 10 s limit.
                let placement_deadline = tokio::time::Instant::now() + PLACEMENT_WAIT;
                let created = loop {
                    match self.context.get_or_create_stream(config.clone()).await {
                        Err(error)
                            if is_no_peers_yet(&error)
                                && tokio::time::Instant::now() < placement_deadline =>
                        {
                            tokio::time::sleep(PLACEMENT_RETRY_PAUSE).await;
                        }
                        created => break created,
                    }
                };
                let info = created
                    .map_err(|error| unavailable(&name, error))?
                    .cached_info()
                    .clone();
                if info.config.subjects != [subject.clone()] {
                    return Err(EngineError::Refused {
                        partition: name,
                        reason: format!(
                            "stream {stream} exists with subjects {:?}, not [{subject}]",
                            info.config.subjects
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}

/// True for the cluster's "no suitable peers for placement" (see [`PLACEMENT_WAIT`]).
fn is_no_peers_yet(error: &jetstream::context::CreateStreamError) -> bool {
    matches!(
        error.kind(),
        jetstream::context::CreateStreamErrorKind::JetStream(inner)
            if inner.error_code() == jetstream::ErrorCode::CLUSTER_NO_PEERS
    )
}

#[async_trait]
impl LogEngine for JetStreamEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Jetstream
    }

    async fn partition_count(&self, topic: &str) -> Result<i32, EngineError> {
        let whole = PartitionName::whole(topic);
        let names = answered(&whole, "listing the streams", || async {
            let mut names = self.context.stream_names();
            let mut all = Vec::new();
            while let Some(name) = names.next().await {
                all.push(name?);
            }
            Ok::<_, jetstream::context::StreamsError>(all)
        })
        .await?
        .map_err(|error| unavailable(&whole, error))?;
        let mut partitions = Vec::new();
        for name in names {
            if let Some((of, partition)) = naming::parse_stream_name(&name)
                && of == topic
            {
                partitions.push(partition);
            }
        }
        partitions.sort_unstable();
        // Partitions are 0..n: a hole means a stream was deleted by hand, and a keyed
        // partitioner over a count with a hole would send keys nowhere.
        if partitions.is_empty() {
            return Err(EngineError::Unknown(whole));
        }
        if partitions.iter().enumerate().any(|(i, &p)| p != i as i32) {
            return Err(EngineError::Broken {
                partition: whole,
                reason: format!("its streams hold partitions {partitions:?}, not 0..n"),
            });
        }
        Ok(partitions.len() as i32)
    }

    async fn open(
        &self,
        topic: &str,
        partition: i32,
    ) -> Result<Arc<dyn PartitionLog>, EngineError> {
        let name = PartitionName {
            topic: topic.to_owned(),
            partition,
        };
        let stream_name = naming::stream_name(topic, partition).map_err(|e| refused(&name, e))?;
        let subject = naming::subject(topic, partition).map_err(|e| refused(&name, e))?;
        let stream = match answered(&name, "looking the stream up", || {
            self.context.get_stream(&stream_name)
        })
        .await?
        {
            Ok(stream) => stream,
            Err(error) => {
                if let jetstream::context::GetStreamErrorKind::JetStream(inner) = error.kind()
                    && inner.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND
                {
                    return Err(EngineError::Unknown(name));
                }
                return Err(unavailable(&name, error));
            }
        };
        Ok(Arc::new(JetStreamPartition {
            context: self.context.clone(),
            stream,
            subject,
            name,
            cursor: Mutex::new(None),
            disconnects: self.disconnects.clone(),
            disconnects_at_open: self.disconnects.load(Ordering::Relaxed),
        }))
    }
}

/// A read cursor: an ephemeral pull consumer and the sequence it delivers next.
struct Cursor {
    consumer: consumer::PullConsumer,
    next: i64,
}

/// One partition: a stream.
struct JetStreamPartition {
    context: jetstream::Context,
    stream: stream::Stream,
    subject: String,
    name: PartitionName,
    cursor: Mutex<Option<Cursor>>,
    disconnects: Arc<AtomicU64>,
    disconnects_at_open: u64,
}

impl std::fmt::Debug for JetStreamPartition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JetStreamPartition")
            .field("name", &self.name)
            .field("subject", &self.subject)
            .finish_non_exhaustive()
    }
}

impl JetStreamPartition {
    /// A new cursor at `from`, after checking `from` is inside the stream (a consumer asked to
    /// start below the first sequence would silently start at it: a skip).
    async fn open_cursor(&self, from: i64) -> Result<Cursor, EngineError> {
        let bounds = self.bounds().await?;
        if from < bounds.start || from > bounds.end {
            return Err(EngineError::OutOfRange {
                partition: self.name.clone(),
                offset: from,
                start: bounds.start,
                end: bounds.end,
            });
        }
        let config = consumer::pull::Config {
            deliver_policy: consumer::DeliverPolicy::ByStartSequence {
                start_sequence: from as u64,
            },
            ack_policy: consumer::AckPolicy::None,
            inactive_threshold: CURSOR_INACTIVE_THRESHOLD,
            memory_storage: true,
            num_replicas: 1,
            ..Default::default()
        };
        // A try that goes unanswered was most likely placed on a node that is down (see
        // API_REQUEST_TIMEOUT); the next try is placed afresh. The consumer the server may have
        // made for the abandoned try is never pulled, and the server removes it after
        // CURSOR_INACTIVE_THRESHOLD.
        let consumer = answered(&self.name, "creating a cursor", || {
            self.stream.create_consumer(config.clone())
        })
        .await?
        .map_err(|error| unavailable(&self.name, error))?;
        Ok(Cursor {
            consumer,
            next: from,
        })
    }

    /// Deletes a cursor's consumer in the background: on a node that died the request would
    /// wait for the client's timeout, and the server removes an idle consumer by itself after
    /// [`CURSOR_INACTIVE_THRESHOLD`] anyway.
    fn forget(&self, cursor: &Cursor) {
        let stream = self.stream.clone();
        let name = cursor_name(cursor);
        tokio::spawn(async move {
            let _ = tokio::time::timeout(API_REQUEST_TIMEOUT, stream.delete_consumer(&name)).await;
        });
    }

    /// One fetch on `cursor`; `Ok(None)` when the cursor delivered out of order and must be
    /// replaced. Also returns the stream's end as the last delivered message saw it (its
    /// sequence + 1 + the messages still pending behind it), when anything was delivered.
    ///
    /// A zero wait is a no-wait fetch (what is there, at once: a replay); otherwise a pull with
    /// an expiry, which the server answers when the batch is full or the expiry passed.
    async fn fetch(
        &self,
        cursor: &mut Cursor,
        limits: ReadLimits,
    ) -> Result<Option<(Vec<LogRecord>, Option<i64>)>, EngineError> {
        let pulled = self
            .pull_in_time(cursor, limits, Some(limits.max_bytes))
            .await?;
        match pulled {
            // nats-server 2.9.10 refuses some pulls with a byte limit far above the message's
            // size ("409 Message Size Exceeds MaxBytes": seen for ~60-byte events with limits of
            // 1 KiB to 16 KiB, on an R3 stream even above). Answering nothing, forever, would
            // stall the reader; so the pull is sent again bounded by `max_records` alone. The
            // read may then carry more bytes than asked, never none.
            Pulled::RefusedMaxBytes => match self.pull_in_time(cursor, limits, None).await? {
                Pulled::RefusedMaxBytes => Err(EngineError::Broken {
                    partition: self.name.clone(),
                    reason: "a pull without a byte limit was refused for its byte limit".into(),
                }),
                pulled => Ok(pulled.into_records()),
            },
            pulled => Ok(pulled.into_records()),
        }
    }

    /// [`pull`](Self::pull), given up after its expiry and [`PULL_GRACE`].
    async fn pull_in_time(
        &self,
        cursor: &mut Cursor,
        limits: ReadLimits,
        max_bytes: Option<usize>,
    ) -> Result<Pulled, EngineError> {
        let limit = limits.wait.max(MIN_FETCH_EXPIRY) + PULL_GRACE;
        tokio::time::timeout(limit, self.pull(cursor, limits, max_bytes))
            .await
            .unwrap_or_else(|_| {
                Err(unavailable(
                    &self.name,
                    format!("a pull was not answered within {limit:?}"),
                ))
            })
    }

    /// One pull request on `cursor`.
    async fn pull(
        &self,
        cursor: &mut Cursor,
        limits: ReadLimits,
        max_bytes: Option<usize>,
    ) -> Result<Pulled, EngineError> {
        let messages = if limits.wait.is_zero() {
            let request = cursor.consumer.fetch().max_messages(limits.max_records);
            match max_bytes {
                Some(bytes) => request.max_bytes(bytes).messages().await,
                None => request.messages().await,
            }
        } else {
            // `no_wait` with an expiry: the server waits up to the expiry for the first message,
            // and ends the request as soon as it delivered some and has no more (a 408 once the
            // consumer reached the stream's end). Without `no_wait` it would hold the answer until
            // the batch is full or the expiry passed: every read of a caught-up follower would
            // cost its whole wait (the task queue's claim round trip is such a read).
            let request = cursor
                .consumer
                .fetch()
                .max_messages(limits.max_records)
                .expires(limits.wait.max(MIN_FETCH_EXPIRY));
            match max_bytes {
                Some(bytes) => request.max_bytes(bytes).messages().await,
                None => request.messages().await,
            }
        };
        let mut messages = messages.map_err(|error| unavailable(&self.name, error))?;
        let mut records = Vec::new();
        let mut end = None;
        while let Some(message) = messages.next().await {
            let message = match message {
                Ok(message) => message,
                Err(error) if error.to_string().contains("Exceeds MaxBytes") => {
                    // The request is over: what came before the refusal is a read; nothing
                    // is a refusal to retry.
                    if records.is_empty() {
                        return Ok(Pulled::RefusedMaxBytes);
                    }
                    break;
                }
                Err(error) => return Err(unavailable(&self.name, error)),
            };
            let info = message.info().map_err(|error| EngineError::Broken {
                partition: self.name.clone(),
                reason: format!("a delivered message without stream info: {error}"),
            })?;
            let sequence = info.stream_sequence as i64;
            end = Some(sequence + 1 + info.pending as i64);
            if sequence != cursor.next {
                // The server's cursor and ours disagree: a fetch abandoned earlier took
                // messages we never saw, or the stream lost its head under us. Never skip.
                return Ok(Pulled::OutOfOrder);
            }
            cursor.next += 1;
            records.push(LogRecord {
                offset: sequence,
                payload: message.message.payload.clone(),
            });
        }
        Ok(Pulled::Records(records, end))
    }
}

/// What one pull request gave.
enum Pulled {
    /// Consecutive records from the cursor's position, and the stream's end as the last one saw
    /// it.
    Records(Vec<LogRecord>, Option<i64>),
    /// A sequence other than the one expected: the cursor must be replaced.
    OutOfOrder,
    /// The server refused the request's byte limit before delivering anything.
    RefusedMaxBytes,
}

impl Pulled {
    fn into_records(self) -> Option<(Vec<LogRecord>, Option<i64>)> {
        match self {
            Pulled::Records(records, end) => Some((records, end)),
            Pulled::OutOfOrder | Pulled::RefusedMaxBytes => None,
        }
    }
}

#[async_trait]
impl PartitionLog for JetStreamPartition {
    fn name(&self) -> &PartitionName {
        &self.name
    }

    async fn append(&self, records: &[Bytes], _ack: Ack) -> Result<Appended, EngineError> {
        if let Some(empty) = records.iter().position(Bytes::is_empty) {
            return Err(EngineError::Refused {
                partition: self.name.clone(),
                reason: format!("record {empty} is empty: records are never empty"),
            });
        }
        // Written and Forced wait for the same PubAck: JetStream acknowledges only once the
        // stream stored the message (on a quorum of replicas at R3). What that means on disk is
        // a server setting: docs/jetstream.md.
        let mut pending = Vec::with_capacity(records.len());
        for record in records {
            let ack = self
                .context
                .publish(self.subject.clone(), record.clone())
                .await
                .map_err(|error| publish_error(&self.name, error))?;
            pending.push(ack);
        }
        let mut offsets = Vec::with_capacity(records.len());
        for ack in pending {
            let ack = ack
                .await
                .map_err(|error| publish_error(&self.name, error))?;
            offsets.push(ack.sequence as i64);
        }
        Ok(Appended { offsets })
    }

    async fn read(&self, from: i64, limits: ReadLimits) -> Result<ReadBatch, EngineError> {
        check_limits(&self.name, limits)?;
        let mut slot = self.cursor.lock().await;
        // At most two tries: the kept cursor, then a new one at `from`.
        let mut stale = false;
        for _ in 0..2 {
            let mut cursor = match slot.take() {
                Some(cursor) if cursor.next == from => cursor,
                _ => self.open_cursor(from).await?,
            };
            match self.fetch(&mut cursor, limits).await {
                Ok(Some((records, end))) => {
                    let end = match end {
                        Some(end) => end,
                        // Nothing delivered: ask the stream where it ends.
                        None => self.bounds().await?.end,
                    };
                    if records.is_empty() && end > from {
                        // Nothing delivered although the stream holds records past `from`:
                        // the cursor is stale (its consumer lived on a node that died, and its
                        // pull requests go nowhere). Seen in the leader-kill test; replace it.
                        self.forget(&cursor);
                        stale = true;
                        continue;
                    }
                    let next_offset = cursor.next;
                    *slot = Some(cursor);
                    return Ok(ReadBatch {
                        records,
                        next_offset,
                        end: end.max(next_offset),
                    });
                }
                Ok(None) => {
                    self.forget(&cursor);
                }
                Err(error) => {
                    self.forget(&cursor);
                    return Err(error);
                }
            }
        }
        if stale {
            return Err(unavailable(
                &self.name,
                format!("no cursor at {from} delivers, although the stream holds more"),
            ));
        }
        // A fresh cursor delivered out of order too: the head moved under it (retention), or
        // the stream is not what it claims.
        let bounds = self.bounds().await?;
        if from < bounds.start {
            return Err(EngineError::OutOfRange {
                partition: self.name.clone(),
                offset: from,
                start: bounds.start,
                end: bounds.end,
            });
        }
        Err(EngineError::Broken {
            partition: self.name.clone(),
            reason: format!("a cursor opened at {from} delivered another sequence first"),
        })
    }

    async fn bounds(&self) -> Result<Bounds, EngineError> {
        let info = answered(&self.name, "stream info", || self.stream.get_info())
            .await?
            .map_err(|error| unavailable(&self.name, error))?;
        let state = info.state;
        let end = state.last_sequence as i64 + 1;
        // An empty stream (never written, or purged) has nothing before its end.
        let start = if state.messages == 0 {
            end
        } else {
            (state.first_sequence as i64).max(ORIGIN)
        };
        Ok(Bounds {
            origin: ORIGIN,
            start,
            end,
        })
    }

    fn reconnects(&self) -> u64 {
        self.disconnects.load(Ordering::Relaxed) - self.disconnects_at_open
    }
}

/// Sends one API request (`call` makes a fresh one) until it is answered — with a result or an
/// error, returned as it is — at most [`API_ATTEMPTS`] times, each bounded by
/// [`API_REQUEST_TIMEOUT`]; unavailable when none was answered. Only for requests that may be
/// repeated: reads, and a cursor's creation, which a repeat makes no worse (an abandoned cursor
/// expires).
async fn answered<T, E, F, Fut>(
    name: &PartitionName,
    what: &str,
    mut call: F,
) -> Result<Result<T, E>, EngineError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    for attempt in 1..=API_ATTEMPTS {
        if let Ok(outcome) = tokio::time::timeout(API_REQUEST_TIMEOUT, call()).await {
            return Ok(outcome);
        }
        tracing::debug!(
            partition = %name,
            attempt,
            "{what}: no answer within {API_REQUEST_TIMEOUT:?}; sending it again"
        );
    }
    Err(unavailable(
        name,
        format!("{what}: no answer to {API_ATTEMPTS} requests of {API_REQUEST_TIMEOUT:?} each"),
    ))
}

fn cursor_name(cursor: &Cursor) -> String {
    cursor.consumer.cached_info().name.clone()
}

fn cluster() -> PartitionName {
    PartitionName::whole("(cluster)")
}

fn refused(name: &PartitionName, error: impl std::fmt::Display) -> EngineError {
    EngineError::Refused {
        partition: name.clone(),
        reason: error.to_string(),
    }
}

fn unavailable(name: &PartitionName, error: impl std::fmt::Display) -> EngineError {
    EngineError::Unavailable {
        partition: name.clone(),
        reason: error.to_string(),
    }
}

fn publish_error(name: &PartitionName, error: jetstream::context::PublishError) -> EngineError {
    use jetstream::context::PublishErrorKind as Kind;
    match error.kind() {
        // The client reports "no responders" as StreamNotFound. The stream was found when the
        // partition was opened, so here it means no replica is answering for it yet: a leader
        // election after a node loss (measured: seconds). Transient.
        Kind::StreamNotFound => unavailable(
            name,
            "no replica of the stream answers (a leader election?)",
        ),
        Kind::MaxPayloadExceeded => refused(name, error),
        Kind::TimedOut | Kind::BrokenPipe | Kind::MaxAckPending | Kind::Other => {
            unavailable(name, error)
        }
        Kind::WrongLastMessageId | Kind::WrongLastSequence => EngineError::Broken {
            partition: name.clone(),
            reason: error.to_string(),
        },
    }
}
