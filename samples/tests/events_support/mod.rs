//! Helpers shared by the `events_*` integration tests: an embedded broker, a publisher run, a tiny
//! HTTP client for `/stats`, and child processes that are killed when a test ends.

#![allow(dead_code)] // Each test file uses a different subset.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use booblik_broker::Broker;
use booblik_client::{Client, ConnectionConfig};
use booblik_samples::engine::{Ack, BooblikEngine, LogEngine};
use booblik_samples::events::publisher::{
    PublisherConfig, PublisherSnapshot, PublisherStats, run_publisher,
};
use booblik_samples::support::embedded_broker;
use booblik_samples::support::shutdown::Shutdown;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a test waits for a condition before failing.
pub const WAIT_LIMIT: Duration = Duration::from_secs(20);

/// A broker with `events:3` (and the queue topics) on a free port, its log in `dir`.
pub async fn start_broker(dir: &Path) -> Broker {
    embedded_broker::start(
        dir,
        "127.0.0.1:0".parse().unwrap(),
        embedded_broker::DEMO_TOPICS,
    )
    .await
    .expect("the embedded broker starts")
}

/// A client of `broker`.
pub async fn client(broker: &Broker) -> Client {
    Client::connect(broker.local_addr().to_string(), ConnectionConfig::default())
        .await
        .expect("the client connects")
}

/// Publishes `count` events over `users` users to `events` as fast as possible (or at
/// `rate_per_s`), and returns what the broker acknowledged.
pub async fn publish(
    client: &Client,
    count: u64,
    users: u32,
    rate_per_s: u32,
) -> PublisherSnapshot {
    publish_to(engine(client), count, users, rate_per_s).await
}

/// The booblik engine over `client`.
pub fn engine(client: &Client) -> Arc<dyn LogEngine> {
    Arc::new(BooblikEngine::new(client.clone()))
}

/// [`publish`] on any engine.
pub async fn publish_to(
    engine: Arc<dyn LogEngine>,
    count: u64,
    users: u32,
    rate_per_s: u32,
) -> PublisherSnapshot {
    let config = PublisherConfig {
        topic: "events".into(),
        rate_per_s,
        users,
        count: Some(count),
        ack: Ack::Written,
    };
    let published = run_publisher(engine, config, PublisherStats::new(), Shutdown::new())
        .await
        .expect("publishing succeeds");
    assert_eq!(published.sent, count, "every event was acknowledged");
    published
}

/// Per partition of `events`: the high watermark now.
pub async fn high_watermarks(client: &Client) -> BTreeMap<i32, i64> {
    client
        .topic("events")
        .await
        .unwrap()
        .partitions()
        .iter()
        .map(|p| (p.id, p.high_watermark))
        .collect()
}

/// Adds up per-partition or per-user counts of several publisher runs.
pub fn sum_counts<K: Ord + Clone>(maps: &[&BTreeMap<K, u64>]) -> BTreeMap<K, u64> {
    let mut sum = BTreeMap::new();
    for map in maps {
        for (key, count) in *map {
            *sum.entry(key.clone()).or_insert(0) += count;
        }
    }
    sum
}

/// A local address nobody listens on (bound, then released).
pub fn free_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// `GET path` on `addr`: the status and the JSON body, or `None` when nothing answers yet.
pub async fn get_json(addr: SocketAddr, path: &str) -> Option<(u16, Value)> {
    let mut stream = TcpStream::connect(addr).await.ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.ok()?;
    let response = String::from_utf8(response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, serde_json::from_str(body).ok()?))
}

/// Polls `GET /stats` on `addr` until `done(stats)` holds; returns those stats. Panics after
/// [`WAIT_LIMIT`] with the last stats seen.
pub async fn wait_for_stats(addr: SocketAddr, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + WAIT_LIMIT;
    let mut last = None;
    loop {
        if let Some((200, stats)) = get_json(addr, "/stats").await {
            if done(&stats) {
                return stats;
            }
            last = Some(stats);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}; last stats: {last:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `stats[field]` as a map partition → i64 (`null` values left out).
pub fn per_partition(stats: &Value, field: &str) -> BTreeMap<i32, i64> {
    stats[field]
        .as_object()
        .unwrap_or_else(|| panic!("stats have no object {field:?}: {stats}"))
        .iter()
        .filter_map(|(p, v)| Some((p.parse().unwrap(), v.as_i64()?)))
        .collect()
}

/// A sample binary running as a child process, its stderr collected; killed if the test ends first.
pub struct Sample {
    pub child: tokio::process::Child,
    stderr: tokio::task::JoinHandle<String>,
}

impl Sample {
    /// Starts `binary` with `args`; `rust_log` sets its log filter.
    pub fn start(binary: &str, args: &[&str], rust_log: &str) -> Self {
        let mut child = tokio::process::Command::new(binary)
            .args(args)
            .env("RUST_LOG", rust_log)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {binary}: {e}"));
        let mut stderr = child.stderr.take().unwrap();
        let stderr = tokio::spawn(async move {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text).await;
            text
        });
        Self { child, stderr }
    }

    /// SIGKILL: no chance to clean up, like a crash or an OOM kill. Returns its stderr.
    pub async fn kill(mut self) -> String {
        self.child.kill().await.unwrap();
        self.stderr.await.unwrap()
    }

    /// SIGTERM, as `docker stop` sends; waits for the exit. Returns the status and its stderr.
    pub async fn terminate(mut self) -> (std::process::ExitStatus, String) {
        let pid = self.child.id().expect("still running");
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -TERM {pid} failed");
        let status = tokio::time::timeout(WAIT_LIMIT, self.child.wait())
            .await
            .expect("the sample exits after SIGTERM")
            .unwrap();
        (status, self.stderr.await.unwrap())
    }

    /// Waits for the exit; returns the status, stdout and stderr.
    pub async fn finish(mut self) -> (std::process::ExitStatus, String, String) {
        let mut stdout = self.child.stdout.take().unwrap();
        let mut out = String::new();
        stdout.read_to_string(&mut out).await.unwrap();
        let status = tokio::time::timeout(WAIT_LIMIT, self.child.wait())
            .await
            .expect("the sample exits")
            .unwrap();
        (status, out, self.stderr.await.unwrap())
    }
}
