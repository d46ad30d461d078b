//! The `booblik-broker` binary as a child process, for tests that must kill it, restart it on
//! the same data directory, or measure its memory — none of which an in-process broker allows.
//!
//! Also a raw protocol connection that, unlike `support::RawConn`, reports a dead broker as a
//! value instead of panicking (producers in a crash test see the kill as an ordinary event), and
//! a reader that walks a whole partition through FETCH, checking every record's CRC.
#![allow(dead_code)] // each test file uses a different part of this module

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use booblik_protocol::{
    AckPolicy, Decoded, ErrorCode, FetchResponse, ProduceResponse, RecordScanner, Request,
    WireMessage, decode_response_frame,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{fetch_request, produce_request};

/// How long a started broker may take to accept connections (recovery included).
const READY_WAIT: Duration = Duration::from_secs(20);
/// Attempts at finding a free port before giving up.
const PORT_ATTEMPTS: u32 = 5;
/// How long one answer may take before a test gives up on it.
pub const CALL_WAIT: Duration = Duration::from_secs(20);
/// What the broker logs (at `info`) once its listener is bound.
const LISTENING_LOG_LINE: &str = "broker listening";
/// Bytes asked per FETCH when reading a partition back.
const READ_MAX_BYTES: i32 = 1024 * 1024;

/// A running `booblik-broker` process.
#[derive(Debug)]
pub struct BrokerProcess {
    child: Child,
    addr: SocketAddr,
    log_path: PathBuf,
}

impl BrokerProcess {
    /// Starts the binary on a free loopback port with `--data-dir data_dir` and `args`, its
    /// output going to `log_path` (logs go to stdout, panic messages to stderr: both are kept),
    /// and waits until it accepts connections.
    pub async fn start(data_dir: &Path, log_path: &Path, args: &[&str]) -> Self {
        for _ in 0..PORT_ATTEMPTS {
            let port = {
                let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                probe.local_addr().unwrap().port()
            };
            let addr: SocketAddr = ([127, 0, 0, 1], port).into();
            let log = std::fs::File::create(log_path).unwrap();
            let child = Command::new(env!("CARGO_BIN_EXE_booblik-broker"))
                .arg("--bind")
                .arg(addr.to_string())
                .arg("--data-dir")
                .arg(data_dir)
                .args(args)
                .env("RUST_LOG", "info")
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .expect("the broker binary starts");
            let mut broker = BrokerProcess {
                child,
                addr,
                log_path: log_path.to_path_buf(),
            };
            if broker.wait_ready().await {
                return broker;
            }
            let log = broker.log();
            assert!(
                log.contains("Address already in use") || log.contains("AddrInUse"),
                "the broker exited at start:\n{log}"
            );
        }
        panic!("no free port found in {PORT_ATTEMPTS} attempts");
    }

    /// Starts the binary and kills it `after` later, whether or not it is ready by then (a
    /// kill during recovery). Returns once it is dead.
    pub async fn start_and_kill_after(
        data_dir: &Path,
        log_path: &Path,
        args: &[&str],
        after: Duration,
    ) {
        let log = std::fs::File::create(log_path).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_booblik-broker"))
            .args(["--bind", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("the broker binary starts");
        tokio::time::sleep(after).await;
        let _ = child.kill();
        child.wait().unwrap();
    }

    /// True once the broker has logged that it listens and accepts a connection; false if it
    /// exited first (e.g. the port was taken). Waiting for the log line, not just a successful
    /// connect, rules out mistaking another program that grabbed the port for our broker.
    async fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + READY_WAIT;
        loop {
            if self.child.try_wait().unwrap().is_some() {
                return false;
            }
            if self.log().contains(LISTENING_LOG_LINE)
                && TcpStream::connect(self.addr).await.is_ok()
            {
                return true;
            }
            assert!(
                Instant::now() < deadline,
                "the broker did not accept connections within {READY_WAIT:?}:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// True while the process runs.
    pub fn is_alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// SIGKILL, then reap.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// SIGTERM (graceful shutdown), then reap; fails the test if it does not exit cleanly.
    pub fn terminate(mut self) {
        // `kill(1)` rather than `libc::kill`, so the test needs no `unsafe`.
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "the broker exited with {status}");
    }

    /// Everything it wrote (stdout and stderr) so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// Fails the test if the broker's output shows a panic (a panicking session task is
    /// otherwise invisible: tokio just drops that connection).
    pub fn assert_no_panic(&self) {
        assert_log_has_no_panic(&self.log_path);
    }

    /// `VmRSS` and `VmHWM` (peak) of the process, in KiB, from `/proc/<pid>/status`.
    pub fn memory_kib(&self) -> Memory {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        let field = |name: &str| -> u64 {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no {name} in /proc/<pid>/status"))
        };
        Memory {
            rss_kib: field("VmRSS:"),
            peak_rss_kib: field("VmHWM:"),
        }
    }
}

impl Drop for BrokerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Fails the test if the log at `path` shows a panic.
pub fn assert_log_has_no_panic(path: &Path) {
    let log = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        !log.contains("panicked"),
        "the broker panicked ({}):\n{log}",
        path.display()
    );
}

/// Resident memory of a process.
#[derive(Debug, Clone, Copy)]
pub struct Memory {
    /// Resident now.
    pub rss_kib: u64,
    /// Highest resident so far.
    pub peak_rss_kib: u64,
}

/// A protocol connection that turns a dead peer into `None`.
#[derive(Debug)]
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

/// A decoded response: error code and body.
#[derive(Debug)]
pub struct Answer {
    pub correlation_id: i32,
    pub error_code: ErrorCode,
    pub body: Vec<u8>,
}

impl Conn {
    /// Connects, or `None` if nobody listens.
    pub async fn connect(addr: SocketAddr) -> Option<Self> {
        let stream = TcpStream::connect(addr).await.ok()?;
        stream.set_nodelay(true).ok()?;
        Some(Self {
            stream,
            buf: Vec::new(),
        })
    }

    /// One request, one answer; `None` if the connection fails or closes first.
    pub async fn call(&mut self, request: &Request) -> Option<Answer> {
        let mut out = Vec::new();
        request.encode(&mut out);
        self.stream.write_all(&out).await.ok()?;
        let answer = tokio::time::timeout(CALL_WAIT, self.recv())
            .await
            .expect("the broker answered in time")?;
        assert_eq!(answer.correlation_id, request.correlation_id);
        Some(answer)
    }

    async fn recv(&mut self) -> Option<Answer> {
        loop {
            if let Decoded::Complete { value, used } =
                decode_response_frame(&self.buf).expect("well-formed response frame")
            {
                let answer = Answer {
                    correlation_id: value.header.correlation_id,
                    error_code: value.header.error_code,
                    body: value.body.to_vec(),
                };
                self.buf.drain(..used);
                return Some(answer);
            }
            // A close or reset, even inside a frame, is how a killed broker looks.
            match self.stream.read_buf(&mut self.buf).await {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
        }
    }

    /// Produces `payloads` to `topic`/`partition`; `Some(base offset)` once acknowledged.
    pub async fn produce(
        &mut self,
        correlation_id: i32,
        topic: &str,
        partition: i32,
        ack: AckPolicy,
        payloads: &[&[u8]],
    ) -> Option<i64> {
        let answer = self
            .call(&produce_request(
                correlation_id,
                topic,
                partition,
                ack,
                payloads,
            ))
            .await?;
        assert_eq!(answer.error_code, ErrorCode::None, "produce refused");
        Some(ProduceResponse::decode(&answer.body).unwrap().0.base_offset)
    }
}

/// Every record of `topic`/`partition`, read through FETCH from offset 0 to the high
/// watermark. Fails the test on a CRC mismatch, a record cut by a segment end, or a log that
/// does not start at 0.
pub async fn read_partition(addr: SocketAddr, topic: &str, partition: i32) -> Vec<Vec<u8>> {
    let mut conn = Conn::connect(addr).await.expect("connect for reading");
    let mut records = Vec::new();
    let mut offset = 0i64;
    loop {
        let answer = conn
            .call(&fetch_request(
                1,
                topic,
                partition,
                offset,
                READ_MAX_BYTES,
                None,
            ))
            .await
            .expect("a FETCH answer");
        assert_eq!(
            answer.error_code,
            ErrorCode::None,
            "{topic}-{partition}: FETCH at {offset} refused"
        );
        let fetched = FetchResponse::decode(&answer.body).unwrap().0;
        if offset == fetched.high_watermark {
            assert!(fetched.payload.is_empty());
            return records;
        }
        let before = records.len();
        let mut scanner = RecordScanner::new(&fetched.payload);
        for record in scanner.by_ref() {
            assert!(
                record.crc_matches(),
                "{topic}-{partition}: CRC mismatch in the record at offset {}",
                offset + (records.len() - before) as i64
            );
            records.push(record.payload.to_vec());
        }
        let got = records.len() - before;
        assert!(
            got > 0,
            "{topic}-{partition}: no whole record at offset {offset} below the high watermark {}",
            fetched.high_watermark
        );
        offset += got as i64;
        assert!(
            offset <= fetched.high_watermark,
            "{topic}-{partition}: records past the high watermark"
        );
    }
}
