//! A fake broker for the client's tests: a tokio listener speaking the protocol through
//! `booblik-protocol`, with an in-memory log, that can misbehave on purpose.
//!
//! It serves each connection the way the spec says a broker must (requests one at a time, in
//! order; `ack = NONE` unanswered unless refused; FETCH v2 long polls that wait for data), and on
//! request it breaks the rules a real broker must never break: a wrong correlationId, a socket
//! closed in the middle of an answer, answers that never come, stored records with a bad CRC.
//! Every request it decodes is recorded, so tests can check what the client actually sent.
#![allow(dead_code)] // each test file uses a different part of it

pub mod real_broker;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use booblik_client::{Client, ConnectionConfig, Producer, ProducerConfig};
use booblik_protocol::{
    ApiKey, Decoded, ErrorCode, FetchResponse, LongPoll, MetadataResponse, PartitionMetadata,
    ProduceResponse, RequestBody, TopicMetadata, TopicName, decode_request_frame,
    encode_error_response, encode_record, encode_response,
};
use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Longest a long poll waits at the fake (the protocol's clamp, like the real broker's).
const MAX_LONG_POLL_MS: i32 = booblik_protocol::MAX_FETCH_WAIT_MS;

/// A request the fake decoded.
#[derive(Debug, Clone)]
pub struct Seen {
    pub correlation_id: i32,
    pub api: ApiKey,
    pub partition: Option<i32>,
    /// PRODUCE: records in the request.
    pub record_count: Option<usize>,
    /// PRODUCE: the payloads.
    pub payloads: Vec<Bytes>,
    /// FETCH: the offset asked for.
    pub fetch_offset: Option<i64>,
    /// FETCH: maxBytes.
    pub max_bytes: Option<i32>,
    /// FETCH v2: the long-poll fields.
    pub long_poll: Option<LongPoll>,
    pub at: Instant,
}

#[derive(Debug, Default)]
struct PartitionLog {
    log_start_offset: i64,
    bytes: Vec<u8>,
    /// Byte position of each record, by offset - log_start_offset.
    positions: Vec<usize>,
}

impl PartitionLog {
    fn high_watermark(&self) -> i64 {
        self.log_start_offset + self.positions.len() as i64
    }

    fn append_raw(&mut self, record: &[u8]) -> i64 {
        let offset = self.high_watermark();
        self.positions.push(self.bytes.len());
        self.bytes.extend_from_slice(record);
        offset
    }

    fn bytes_past(&self, offset: i64) -> usize {
        match self.position_of(offset) {
            Some(position) => self.bytes.len() - position,
            None => 0,
        }
    }

    fn position_of(&self, offset: i64) -> Option<usize> {
        let index = usize::try_from(offset - self.log_start_offset).ok()?;
        if index == self.positions.len() {
            Some(self.bytes.len())
        } else {
            self.positions.get(index).copied()
        }
    }
}

#[derive(Debug, Default)]
struct Misbehaviour {
    /// The next answer carries this much added to its correlationId.
    shift_next_correlation_id: Option<i32>,
    /// Answers are not written at all.
    never_answer: bool,
    /// The next answer is cut in half and the socket closed.
    close_mid_next_response: bool,
    /// Each connection collects this many requests before serving any.
    gather_requests: usize,
    /// FETCH payloads are cut to this many bytes (after maxBytes).
    cut_fetch_payload_bytes: Option<usize>,
    /// FETCH v2 is answered at once, as if maxWaitMillis were 0.
    ignore_max_wait: bool,
}

#[derive(Debug, Default)]
struct Inner {
    topics: BTreeMap<TopicName, Vec<PartitionLog>>,
    seen: Vec<Seen>,
    misbehaviour: Misbehaviour,
    /// A record larger than this (header included) is RECORD_TOO_LARGE.
    max_record_bytes: usize,
}

#[derive(Debug, Default)]
struct State {
    inner: Mutex<Inner>,
    appended: Notify,
}

impl State {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap()
    }
}

/// The fake broker. Stops when dropped.
#[derive(Debug)]
pub struct FakeBroker {
    addr: SocketAddr,
    state: Arc<State>,
    task: JoinHandle<()>,
}

impl Drop for FakeBroker {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeBroker {
    /// Starts on 127.0.0.1 with these topics and partition counts.
    pub async fn start(topics: &[(&str, u32)]) -> FakeBroker {
        let state = Arc::new(State::default());
        {
            let mut inner = state.lock();
            inner.max_record_bytes = 64 * 1024 * 1024;
            for (name, count) in topics {
                let partitions = (0..*count).map(|_| PartitionLog::default()).collect();
                inner
                    .topics
                    .insert(TopicName::new(*name).unwrap(), partitions);
            }
        }
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accept_state = Arc::clone(&state);
        let task = tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                tokio::spawn(serve(Arc::clone(&accept_state), socket));
            }
        });
        FakeBroker { addr, state, task }
    }

    /// `host:port` to connect to.
    pub fn addr(&self) -> String {
        self.addr.to_string()
    }

    /// Appends well-formed records; returns the first one's offset.
    pub fn append(&self, topic: &str, partition: i32, payloads: &[&[u8]]) -> i64 {
        let mut encoded = Vec::new();
        let base = {
            let mut inner = self.state.lock();
            let log = partition_mut(&mut inner, topic, partition);
            let base = log.high_watermark();
            for payload in payloads {
                encoded.clear();
                encode_record(payload, &mut encoded);
                log.append_raw(&encoded);
            }
            base
        };
        self.state.appended.notify_waiters();
        base
    }

    /// Appends one record whose stored CRC does not match its payload.
    pub fn append_with_bad_crc(&self, topic: &str, partition: i32, payload: &[u8]) -> i64 {
        let mut encoded = Vec::new();
        encode_record(payload, &mut encoded);
        encoded[4] ^= 0xff;
        let offset = {
            let mut inner = self.state.lock();
            partition_mut(&mut inner, topic, partition).append_raw(&encoded)
        };
        self.state.appended.notify_waiters();
        offset
    }

    /// The payloads stored in a partition, in offset order.
    pub fn records(&self, topic: &str, partition: i32) -> Vec<Vec<u8>> {
        let mut inner = self.state.lock();
        let log = partition_mut(&mut inner, topic, partition);
        booblik_protocol::RecordScanner::new(&log.bytes)
            .map(|r| r.payload.to_vec())
            .collect()
    }

    /// The partition's high watermark.
    pub fn high_watermark(&self, topic: &str, partition: i32) -> i64 {
        let mut inner = self.state.lock();
        partition_mut(&mut inner, topic, partition).high_watermark()
    }

    /// Every request decoded so far, in arrival order.
    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().seen.clone()
    }

    /// Requests of one kind decoded so far.
    pub fn seen_of(&self, api: ApiKey) -> Vec<Seen> {
        self.seen().into_iter().filter(|s| s.api == api).collect()
    }

    /// Records larger than this many bytes (header included) are refused.
    pub fn set_max_record_bytes(&self, bytes: usize) {
        self.state.lock().max_record_bytes = bytes;
    }

    /// The next answer carries `correlationId + shift`.
    pub fn shift_next_correlation_id(&self, shift: i32) {
        self.state.lock().misbehaviour.shift_next_correlation_id = Some(shift);
    }

    /// From now on, requests are read (and applied) but never answered.
    pub fn never_answer(&self) {
        self.state.lock().misbehaviour.never_answer = true;
    }

    /// The next answer is cut in half and the socket closed.
    pub fn close_mid_next_response(&self) {
        self.state.lock().misbehaviour.close_mid_next_response = true;
    }

    /// Each new connection reads `count` requests before serving any, so that many are
    /// pending at the client when the first answer goes out.
    pub fn gather_requests(&self, count: usize) {
        self.state.lock().misbehaviour.gather_requests = count;
    }

    /// From now on, FETCH v2 is answered at once, whatever maxWaitMillis says.
    pub fn ignore_max_wait(&self) {
        self.state.lock().misbehaviour.ignore_max_wait = true;
    }

    /// FETCH payloads are cut to at most this many bytes, whatever maxBytes said.
    pub fn cut_fetch_payloads_to(&self, bytes: usize) {
        self.state.lock().misbehaviour.cut_fetch_payload_bytes = Some(bytes);
    }
}

fn partition_mut<'a>(inner: &'a mut Inner, topic: &str, partition: i32) -> &'a mut PartitionLog {
    let topic = TopicName::new(topic).unwrap();
    &mut inner.topics.get_mut(&topic).expect("no such topic")[partition as usize]
}

/// A client of `broker` (with [`test_config`]) and its producer for `topic`, default settings.
pub async fn client_and_producer(broker: &FakeBroker, topic: &str) -> (Client, Producer) {
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    let producer = client
        .producer(topic, ProducerConfig::default())
        .await
        .unwrap();
    (client, producer)
}

/// A client configuration with timeouts short enough for tests to fail quickly.
pub fn test_config() -> ConnectionConfig {
    ConnectionConfig {
        connect_timeout_ms: 5_000,
        request_timeout_ms: 10_000,
        ..ConnectionConfig::default()
    }
}

/// Guards a wait that must finish: fails the test instead of hanging it.
pub async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within 20 s"))
}

async fn serve(state: Arc<State>, mut socket: TcpStream) {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut gathered = Vec::new();
    // Only the first answers of a connection wait for a gathering.
    let mut gather = state.lock().misbehaviour.gather_requests.max(1);
    loop {
        // Decode every whole frame in the buffer.
        loop {
            match decode_request_frame(&buf) {
                Err(_) => return, // framing lost: close without an answer
                Ok(Decoded::Incomplete { .. }) => break,
                Ok(Decoded::Complete { value, used }) => {
                    buf.advance(used);
                    gathered.push(value);
                }
            }
        }
        if gathered.len() >= gather {
            gather = 1;
            for request in gathered.drain(..) {
                let answer = match request {
                    Ok(request) => {
                        let id = request.correlation_id;
                        handle(&state, request.correlation_id, request.body)
                            .await
                            .map(|bytes| (id, bytes))
                    }
                    Err(e) => {
                        let mut out = BytesMut::new();
                        encode_error_response(e.correlation_id, e.error_code(), &mut out);
                        Some((e.correlation_id, out))
                    }
                };
                if let Some((_, bytes)) = answer
                    && !write_answer(&state, &mut socket, bytes).await
                {
                    return;
                }
            }
        }
        match socket.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Writes one answer, applying the misbehaviours; false when the connection should end.
async fn write_answer(state: &State, socket: &mut TcpStream, mut bytes: BytesMut) -> bool {
    let (shift, never, close_mid) = {
        let mut inner = state.lock();
        let m = &mut inner.misbehaviour;
        (
            m.shift_next_correlation_id.take(),
            m.never_answer,
            std::mem::take(&mut m.close_mid_next_response),
        )
    };
    if never {
        return true;
    }
    if let Some(shift) = shift {
        let id = i32::from_be_bytes(bytes[4..8].try_into().unwrap());
        bytes[4..8].copy_from_slice(&(id.wrapping_add(shift)).to_be_bytes());
    }
    if close_mid {
        let half = bytes.len() / 2;
        let _ = socket.write_all(&bytes[..half]).await;
        let _ = socket.shutdown().await;
        return false;
    }
    socket.write_all(&bytes).await.is_ok()
}

/// Serves one request; `None` when no answer is due (`ack = NONE` accepted).
async fn handle(state: &State, correlation_id: i32, body: RequestBody) -> Option<BytesMut> {
    let mut out = BytesMut::new();
    let error = |code: ErrorCode| {
        let mut out = BytesMut::new();
        encode_error_response(correlation_id, code, &mut out);
        Some(out)
    };
    match body {
        RequestBody::Produce(produce) => {
            let payloads: Vec<Bytes> = produce.records.iter().map(Bytes::copy_from_slice).collect();
            let mut inner = state.lock();
            inner.seen.push(Seen {
                correlation_id,
                api: ApiKey::Produce,
                partition: Some(produce.partition),
                record_count: Some(produce.records.count()),
                payloads: payloads.clone(),
                fetch_offset: None,
                max_bytes: None,
                long_poll: None,
                at: Instant::now(),
            });
            let max_record_bytes = inner.max_record_bytes;
            let Some(log) = inner
                .topics
                .get_mut(&produce.topic)
                .and_then(|p| p.get_mut(usize::try_from(produce.partition).ok()?))
            else {
                return error(ErrorCode::UnknownTopicOrPartition);
            };
            if produce.records.max_payload_len() + 8 > max_record_bytes {
                return error(ErrorCode::RecordTooLarge);
            }
            let base_offset = log.high_watermark();
            let mut encoded = Vec::new();
            for payload in &payloads {
                encoded.clear();
                encode_record(payload, &mut encoded);
                log.append_raw(&encoded);
            }
            let log_end_offset = log.high_watermark();
            drop(inner);
            state.appended.notify_waiters();
            if produce.ack == booblik_protocol::AckPolicy::None {
                return None;
            }
            encode_response(
                correlation_id,
                &ProduceResponse {
                    base_offset,
                    log_end_offset,
                },
                &mut out,
            );
        }
        RequestBody::Fetch(fetch) => {
            state.lock().seen.push(Seen {
                correlation_id,
                api: ApiKey::Fetch,
                partition: Some(fetch.partition),
                record_count: None,
                payloads: Vec::new(),
                fetch_offset: Some(fetch.fetch_offset),
                max_bytes: Some(fetch.max_bytes),
                long_poll: fetch.long_poll,
                at: Instant::now(),
            });
            let exists = |inner: &Inner| {
                inner
                    .topics
                    .get(&fetch.topic)
                    .and_then(|p| p.get(usize::try_from(fetch.partition).ok()?))
                    .is_some()
            };
            if !exists(&state.lock()) {
                return error(ErrorCode::UnknownTopicOrPartition);
            }
            let ignore_max_wait = state.lock().misbehaviour.ignore_max_wait;
            if let Some(long_poll) = fetch
                .long_poll
                .filter(|lp| lp.max_wait_ms > 0 && !ignore_max_wait)
            {
                let wait_ms = long_poll.max_wait_ms.min(MAX_LONG_POLL_MS);
                let deadline = Instant::now() + Duration::from_millis(wait_ms as u64);
                let need = long_poll.min_bytes.max(1) as usize;
                loop {
                    let notified = state.appended.notified();
                    tokio::pin!(notified);
                    notified.as_mut().enable();
                    let available = {
                        let inner = state.lock();
                        inner.topics[&fetch.topic][fetch.partition as usize]
                            .bytes_past(fetch.fetch_offset)
                    };
                    if available >= need {
                        break;
                    }
                    if tokio::time::timeout_at(deadline, notified).await.is_err() {
                        break;
                    }
                }
            }
            let inner = state.lock();
            let log = &inner.topics[&fetch.topic][fetch.partition as usize];
            if fetch.fetch_offset < log.log_start_offset
                || fetch.fetch_offset > log.high_watermark()
            {
                drop(inner);
                return error(ErrorCode::OffsetOutOfRange);
            }
            let start = log.position_of(fetch.fetch_offset).unwrap();
            let mut end = log.bytes.len().min(start + fetch.max_bytes as usize);
            if let Some(cut) = inner.misbehaviour.cut_fetch_payload_bytes {
                end = end.min(start + cut);
            }
            let response = FetchResponse {
                high_watermark: log.high_watermark(),
                payload: Bytes::copy_from_slice(&log.bytes[start..end]),
            };
            encode_response(correlation_id, &response, &mut out);
        }
        RequestBody::Metadata(metadata) => {
            let mut inner = state.lock();
            inner.seen.push(Seen {
                correlation_id,
                api: ApiKey::Metadata,
                partition: None,
                record_count: None,
                payloads: Vec::new(),
                fetch_offset: None,
                max_bytes: None,
                long_poll: None,
                at: Instant::now(),
            });
            let names: Vec<TopicName> = if metadata.topics.is_empty() {
                inner.topics.keys().cloned().collect()
            } else {
                metadata.topics.clone()
            };
            let mut topics = Vec::new();
            for name in names {
                let Some(partitions) = inner.topics.get(&name) else {
                    drop(inner);
                    return error(ErrorCode::UnknownTopicOrPartition);
                };
                topics.push(TopicMetadata {
                    name: name.clone(),
                    partitions: partitions
                        .iter()
                        .enumerate()
                        .map(|(id, log)| PartitionMetadata {
                            id: id as i32,
                            log_start_offset: log.log_start_offset,
                            high_watermark: log.high_watermark(),
                        })
                        .collect(),
                });
            }
            topics.sort_by(|a, b| a.name.cmp(&b.name));
            encode_response(correlation_id, &MetadataResponse { topics }, &mut out);
        }
    }
    Some(out)
}
