//! Shared fixtures for the broker's integration tests: an in-process broker on a free port, and
//! a raw TCP connection that speaks bytes, not the client library, so tests see exactly what the
//! broker sends.
#![allow(dead_code)] // each test file uses a different part of this module

use std::time::Duration;

use booblik_broker::storage::WriteMode;
use booblik_broker::{Broker, BrokerConfig, FetchMode, parse_topics};
use booblik_protocol::{
    AckPolicy, Decoded, ErrorCode, FetchRequest, FetchResponse, LongPoll, MetadataRequest,
    MetadataResponse, ProduceRequest, ProduceResponse, RecordScanner, RecordSet, Request,
    RequestBody, ResponseHeader, TopicName, WireMessage, decode_response_frame,
};
use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a test waits for any single answer before failing.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

pub struct TestBroker {
    pub broker: Broker,
    pub dir: TempDir,
}

impl TestBroker {
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    pub async fn start_with(tweak: impl FnOnce(&mut BrokerConfig)) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = test_config(&dir);
        tweak(&mut config);
        let broker = Broker::start(config).await.expect("broker starts");
        Self { broker, dir }
    }

    pub async fn connect(&self) -> RawConn {
        RawConn::connect(self.broker.local_addr()).await
    }
}

/// Topics `events:3,solo:1` on small (1 MiB) segments in `dir`, on a free loopback port.
pub fn test_config(dir: &TempDir) -> BrokerConfig {
    let mut config = BrokerConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        topics: parse_topics("events:3,solo:1").unwrap(),
        fetch_mode: FetchMode::ZeroCopy,
        ..BrokerConfig::default()
    };
    config.storage.data_dir = dir.path().to_path_buf();
    config.storage.segment_bytes = 1024 * 1024;
    config.storage.write_mode = WriteMode::Mapped;
    config
}

pub fn topic(name: &str) -> TopicName {
    TopicName::new(name).unwrap()
}

/// A response frame as received: header and raw body.
#[derive(Debug, Clone)]
pub struct RawResponse {
    pub header: ResponseHeader,
    pub body: Vec<u8>,
}

impl RawResponse {
    pub fn expect_ok(&self) -> &Self {
        assert_eq!(
            self.header.error_code,
            ErrorCode::None,
            "expected success: {self:?}"
        );
        self
    }

    pub fn produce(&self) -> ProduceResponse {
        self.expect_ok();
        ProduceResponse::decode(&self.body).unwrap().0
    }

    pub fn fetch(&self) -> FetchResponse {
        self.expect_ok();
        FetchResponse::decode(&self.body).unwrap().0
    }

    pub fn metadata(&self) -> MetadataResponse {
        self.expect_ok();
        MetadataResponse::decode(&self.body).unwrap().0
    }
}

pub struct RawConn {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl RawConn {
    pub async fn connect(addr: std::net::SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).unwrap();
        Self {
            stream,
            buf: Vec::new(),
        }
    }

    pub fn from_stream(stream: TcpStream) -> Self {
        Self {
            stream,
            buf: Vec::new(),
        }
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("write");
    }

    pub async fn send(&mut self, request: &Request) {
        let mut out = Vec::new();
        request.encode(&mut out);
        self.send_raw(&out).await;
    }

    /// Reads the next response frame; panics on timeout or close.
    pub async fn recv(&mut self) -> RawResponse {
        tokio::time::timeout(ANSWER_TIMEOUT, self.try_recv())
            .await
            .expect("an answer within the timeout")
            .expect("a response, not a closed connection")
    }

    /// Reads the next response frame, or `None` if the broker closed the connection.
    pub async fn try_recv(&mut self) -> Option<RawResponse> {
        loop {
            if let Decoded::Complete { value, used } =
                decode_response_frame(&self.buf).expect("well-formed response frame")
            {
                let response = RawResponse {
                    header: value.header,
                    body: value.body.to_vec(),
                };
                self.buf.drain(..used);
                return Some(response);
            }
            let n = self.stream.read_buf(&mut self.buf).await.ok()?;
            if n == 0 {
                assert!(
                    self.buf.is_empty(),
                    "connection closed inside a response frame"
                );
                return None;
            }
        }
    }

    /// True when the broker closes the connection without sending anything more.
    pub async fn closed_without_answer(&mut self) -> bool {
        match tokio::time::timeout(ANSWER_TIMEOUT, self.try_recv()).await {
            Ok(None) => true,
            Ok(Some(r)) => panic!("expected the connection to close, got {r:?}"),
            Err(elapsed) => panic!("expected the connection to close, it stayed open ({elapsed})"),
        }
    }

    pub async fn call(&mut self, request: &Request) -> RawResponse {
        self.send(request).await;
        let response = self.recv().await;
        assert_eq!(response.header.correlation_id, request.correlation_id);
        response
    }

    pub async fn produce(
        &mut self,
        topic_name: &str,
        partition: i32,
        payloads: &[&[u8]],
    ) -> ProduceResponse {
        self.call(&produce_request(
            7,
            topic_name,
            partition,
            AckPolicy::Written,
            payloads,
        ))
        .await
        .produce()
    }

    pub async fn fetch(
        &mut self,
        topic_name: &str,
        partition: i32,
        offset: i64,
        max_bytes: i32,
    ) -> RawResponse {
        self.call(&fetch_request(
            8, topic_name, partition, offset, max_bytes, None,
        ))
        .await
    }

    pub async fn metadata(&mut self, topics: &[&str]) -> RawResponse {
        self.call(&Request {
            correlation_id: 9,
            body: RequestBody::Metadata(MetadataRequest {
                topics: topics.iter().map(|t| topic(t)).collect(),
            }),
        })
        .await
    }
}

pub fn produce_request(
    correlation_id: i32,
    topic_name: &str,
    partition: i32,
    ack: AckPolicy,
    payloads: &[&[u8]],
) -> Request {
    Request {
        correlation_id,
        body: RequestBody::Produce(ProduceRequest {
            topic: topic(topic_name),
            partition,
            ack,
            records: RecordSet::from_payloads(payloads).unwrap(),
        }),
    }
}

pub fn fetch_request(
    correlation_id: i32,
    topic_name: &str,
    partition: i32,
    fetch_offset: i64,
    max_bytes: i32,
    long_poll: Option<LongPoll>,
) -> Request {
    Request {
        correlation_id,
        body: RequestBody::Fetch(FetchRequest {
            topic: topic(topic_name),
            partition,
            fetch_offset,
            max_bytes,
            long_poll,
        }),
    }
}

/// Whole records of a FETCH payload, each checked against its CRC.
pub fn payloads(fetch: &FetchResponse) -> Vec<Vec<u8>> {
    RecordScanner::new(&fetch.payload)
        .map(|r| {
            assert!(r.crc_matches(), "CRC mismatch at byte {}", r.position);
            r.payload.to_vec()
        })
        .collect()
}

/// Hand-builds a request frame: `len, apiKey, apiVersion, correlationId, body`.
pub fn raw_frame(api_key: i16, api_version: i16, correlation_id: i32, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&((8 + body.len()) as i32).to_be_bytes());
    out.extend_from_slice(&api_key.to_be_bytes());
    out.extend_from_slice(&api_version.to_be_bytes());
    out.extend_from_slice(&correlation_id.to_be_bytes());
    out.extend_from_slice(body);
    out
}

// A test that takes both `support` and `storage_support` loads this file twice, once in each.
#[allow(clippy::duplicate_mod)]
#[path = "../idle_support/mod.rs"]
mod idle_support;
pub use idle_support::wait_until_idle;

/// Produces a first batch to `solo`/0 over `conn` and waits until `partition` (that partition)
/// is idle again. In MAPPED mode the first batch reserves the segment's first disk blocks
/// (`fallocate`), which is the writer thread's work; the batches after it can be appended inline.
pub async fn idle_after_a_first_produce(
    conn: &mut RawConn,
    partition: &booblik_broker::storage::Partition,
) {
    conn.produce("solo", 0, &[b"first"]).await;
    wait_until_idle(partition).await;
}
