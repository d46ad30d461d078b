//! The real `booblik-broker` binary on a disk that fills up refuses appends instead of dying,
//! keeps every acknowledged record, and takes appends again once space returns — without a
//! restart. Both write modes:
//!
//! * MAPPED used to die here: a store into a sparse segment's hole on a full disk raises
//!   `SIGBUS`. Now the segment's blocks are reserved with `fallocate` before records are copied,
//!   so the shortage is an error;
//! * FILE used to poison the partition on the `ENOSPC` from `pwrite`. Now the file is cut back to
//!   the last whole record and the batch is refused.
//!
//! The disk is a 4 MiB tmpfs, half taken by a filler file, mounted in a private mount namespace
//! (`unshare --mount`) so nothing outside the test sees it; the broker runs inside it with 1 MiB
//! segments, so the disk fills after a roll or two. One 1 KiB record per batch, acknowledged
//! WRITTEN, until the broker refuses (the protocol has no code for a full disk: the connection
//! closes). Then: the broker still runs; a new connection sees every acknowledged record, in
//! order, and nothing else; the refusal was logged and counted; the filler is deleted (through
//! `/proc/<pid>/root`, the broker's view of the mounts) and appends land right after the last
//! acknowledged record. Needs root (as the tests and CI run here); without it the test fails
//! loudly rather than skipping.

mod support;

mod crash_support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use booblik_protocol::{
    AckPolicy, ErrorCode, MetadataRequest, MetadataResponse, RECORD_HEADER_BYTES, Request,
    RequestBody, TopicName, WireMessage,
};
use crash_support::{Conn, assert_log_has_no_panic, read_partition};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TOPIC: &str = "full";
/// Size of the private tmpfs the broker's data directory lives on.
const TMPFS_SIZE: &str = "4m";
/// Filler sizes, in KiB: 2 MiB leaves room for exactly two full 1 MiB segments, so the disk
/// is full when the third one is started; 2.5 MiB leaves 1.5 MiB, so it fills inside the second
/// segment (MAPPED: its 1 MiB reservation fails, then record-sized ones; FILE: a short `pwrite`).
const FILLER_AT_A_ROLL_KIB: u64 = 2048;
const FILLER_INSIDE_A_SEGMENT_KIB: u64 = 2560;
const SEGMENT_BYTES: &str = "1048576";
const RECORD_BYTES: usize = 1024;
/// More records than the tmpfs can hold: the broker must refuse before this many.
const MAX_RECORDS: usize = 8192;
/// Records appended once space returns.
const RECORDS_AFTER_SPACE_RETURNS: usize = 64;
/// How long the broker may take to start listening.
const READY_WAIT: Duration = Duration::from_secs(20);
/// Attempts at finding free ports before giving up.
const PORT_ATTEMPTS: u32 = 5;
/// What the broker logs once its listener is bound.
const LISTENING_LOG_LINE: &str = "broker listening";
/// What the server logs when it refuses an append for want of space.
const REFUSAL_LOG_LINE: &str = "append refused: no space left";
/// The refusal counter, as Prometheus text names it.
const REFUSALS_METRIC: &str = "booblik_storage_no_space_refusals_total";
/// How long to wait for a broker that closed a connection unexpectedly to exit, to report why.
const EXIT_WAIT: Duration = Duration::from_secs(2);
/// How long a metrics scrape may take.
const SCRAPE_WAIT: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mapped_broker_refuses_appends_on_a_full_disk_and_takes_them_when_space_returns() {
    full_disk_round("mapped", FILLER_AT_A_ROLL_KIB).await;
    full_disk_round("mapped", FILLER_INSIDE_A_SEGMENT_KIB).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_broker_refuses_appends_on_a_full_disk_and_takes_them_when_space_returns() {
    full_disk_round("file", FILLER_AT_A_ROLL_KIB).await;
    full_disk_round("file", FILLER_INSIDE_A_SEGMENT_KIB).await;
}

/// Record `n`: its number, then bytes derived from it, `RECORD_BYTES` in all.
fn payload(n: usize) -> Vec<u8> {
    let mut bytes = format!("record {n}:").into_bytes();
    while bytes.len() < RECORD_BYTES {
        bytes.push((n.wrapping_mul(31) + bytes.len() * 7) as u8);
    }
    bytes
}

async fn full_disk_round(mode: &str, filler_kib: u64) {
    let case = &format!("{mode}, {filler_kib} KiB filler");
    let mut broker = FullDiskBroker::start(mode, filler_kib).await;

    // Fill the disk, one acknowledged record at a time.
    let mut acknowledged: Vec<Vec<u8>> = Vec::new();
    let mut conn = Conn::connect(broker.addr).await.expect("connect");
    loop {
        assert!(
            acknowledged.len() < MAX_RECORDS,
            "{case}: {MAX_RECORDS} records of {RECORD_BYTES} B fit a {TMPFS_SIZE} tmpfs?"
        );
        let record = payload(acknowledged.len());
        let Some(base_offset) = conn
            .produce(1, TOPIC, 0, AckPolicy::Written, &[&record])
            .await
        else {
            break;
        };
        assert_eq!(base_offset, acknowledged.len() as i64, "{case}");
        acknowledged.push(record);
    }
    drop(conn);
    println!(
        "{case}: refused after {} acknowledged records of {RECORD_BYTES} B",
        acknowledged.len()
    );
    broker.assert_alive(case);
    let log = broker.log();
    let Some(refusal) = log.lines().find(|line| line.contains(REFUSAL_LOG_LINE)) else {
        // A process killed by a signal takes a moment to be reapable: say how it ended.
        let how = match broker.exit_within(EXIT_WAIT) {
            Some(status) => format!("ended ({status}; SIGBUS is a store into a sparse mapping)"),
            None => "still runs".to_owned(),
        };
        panic!("{case}: the connection closed without a logged refusal; the broker {how}:\n{log}");
    };
    println!("{case}: {refusal}");

    // Everything acknowledged is there, and nothing else.
    assert_eq!(
        high_watermark(broker.addr).await,
        acknowledged.len() as i64,
        "{case}"
    );
    assert!(
        read_partition(broker.addr, TOPIC, 0).await == acknowledged,
        "{case}: the log differs from the acknowledged records"
    );
    if mode == "file" {
        // A FILE segment ends where its file ends, after a restart too: the refused batch must
        // have left no byte behind (a short `pwrite` is cut back).
        assert_eq!(
            broker.segment_file_bytes(),
            (acknowledged.len() * (RECORD_BYTES + RECORD_HEADER_BYTES)) as u64,
            "{case}: the segment files hold more than the acknowledged records"
        );
    }
    let refusals = broker.refusals_counted().await;
    assert!(refusals >= 1, "{case}: {refusals} refusals counted");
    // Again, now that a dying process (a kill by a signal takes a moment) would have gone.
    broker.assert_alive(case);

    // Space returns; the same partition takes appends again, right after the last record.
    broker.delete_filler();
    let mut conn = Conn::connect(broker.addr).await.expect("connect again");
    for _ in 0..RECORDS_AFTER_SPACE_RETURNS {
        let record = payload(acknowledged.len());
        let base_offset = conn
            .produce(2, TOPIC, 0, AckPolicy::Written, &[&record])
            .await
            .unwrap_or_else(|| {
                panic!(
                    "{case}: an append after space returned was refused:\n{}",
                    broker.log()
                )
            });
        assert_eq!(base_offset, acknowledged.len() as i64, "{case}");
        acknowledged.push(record);
    }
    // A FORCED append too: the partition was not poisoned, its fsyncs work.
    let record = payload(acknowledged.len());
    let base_offset = conn
        .produce(3, TOPIC, 0, AckPolicy::Forced, &[&record])
        .await
        .expect("a FORCED append after space returned");
    assert_eq!(base_offset, acknowledged.len() as i64, "{case}");
    acknowledged.push(record);
    assert!(
        read_partition(broker.addr, TOPIC, 0).await == acknowledged,
        "{case}: the log differs from the acknowledged records after space returned"
    );
    broker.assert_alive(case);
    assert_log_has_no_panic(&broker.log_path);
}

/// The high watermark of partition 0 of [`TOPIC`], from METADATA.
async fn high_watermark(addr: SocketAddr) -> i64 {
    let mut conn = Conn::connect(addr).await.expect("connect for METADATA");
    let answer = conn
        .call(&Request {
            correlation_id: 7,
            body: RequestBody::Metadata(MetadataRequest {
                topics: vec![TopicName::new(TOPIC).unwrap()],
            }),
        })
        .await
        .expect("a METADATA answer");
    assert_eq!(answer.error_code, ErrorCode::None);
    let metadata = MetadataResponse::decode(&answer.body).unwrap().0;
    metadata.topics[0].partitions[0].high_watermark
}

/// The broker binary in its own mount namespace, on a small tmpfs that is half full.
struct FullDiskBroker {
    child: Child,
    addr: SocketAddr,
    metrics_addr: SocketAddr,
    /// The tmpfs mount point: an empty directory here, the tmpfs inside the namespace.
    mount_dir: tempfile::TempDir,
    /// Holds the log, outside the mount point.
    _log_dir: tempfile::TempDir,
    log_path: PathBuf,
}

impl FullDiskBroker {
    async fn start(write_mode: &str, filler_kib: u64) -> Self {
        let mount_dir = tempfile::tempdir().unwrap();
        let log_dir = tempfile::tempdir().unwrap();
        let log_path = log_dir.path().join("broker.log");
        // `unshare` without `--fork` and the shell's `exec` keep one process: the child's pid
        // is the broker's. unshare makes the new namespace's mounts private, so the tmpfs never
        // shows outside it.
        let script = format!(
            "mount -t tmpfs -o size={TMPFS_SIZE} booblik-full \"$1\" \
             && fallocate -l {filler_kib}KiB \"$1/filler\" \
             && shift && exec \"$@\""
        );
        for _ in 0..PORT_ATTEMPTS {
            let addr = free_port();
            let metrics_addr = free_port();
            let log = std::fs::File::create(&log_path).unwrap();
            let mut child = Command::new("unshare")
                .args(["--mount", "sh", "-c", &script, "sh"])
                .arg(mount_dir.path())
                .arg(env!("CARGO_BIN_EXE_booblik-broker"))
                .arg("--bind")
                .arg(addr.to_string())
                .arg("--metrics-bind")
                .arg(metrics_addr.to_string())
                .arg("--data-dir")
                .arg(mount_dir.path().join("data"))
                .args(["--topics", &format!("{TOPIC}:1")])
                .args(["--write-mode", write_mode, "--segment-bytes", SEGMENT_BYTES])
                .env("RUST_LOG", "info")
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .expect("unshare runs (util-linux)");
            if wait_ready(&mut child, addr, &log_path).await {
                let broker = FullDiskBroker {
                    child,
                    addr,
                    metrics_addr,
                    mount_dir,
                    _log_dir: log_dir,
                    log_path,
                };
                broker.assert_on_the_small_tmpfs(filler_kib);
                return broker;
            }
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            assert!(
                log.contains("Address already in use") || log.contains("AddrInUse"),
                "the broker did not start inside a private mount namespace on a {TMPFS_SIZE} \
                 tmpfs (this test needs root for `unshare --mount` and `mount -t tmpfs`; it \
                 must not be skipped):\n{log}"
            );
        }
        panic!("no free ports found in {PORT_ATTEMPTS} attempts");
    }

    /// The data directory really is on the tmpfs, seen from the broker (and not on the real
    /// disk, where the test would pass without ever filling anything).
    fn assert_on_the_small_tmpfs(&self, filler_kib: u64) {
        let filler = self.in_namespace("filler");
        let filler_bytes = std::fs::metadata(&filler)
            .unwrap_or_else(|e| panic!("{}: {e}", filler.display()))
            .len();
        assert_eq!(filler_bytes, filler_kib * 1024);
        assert!(
            std::fs::read_dir(self.mount_dir.path())
                .unwrap()
                .next()
                .is_none(),
            "the tmpfs leaked out of the broker's mount namespace"
        );
    }

    /// `name` inside the tmpfs, through the broker's view of the mounts.
    fn in_namespace(&self, name: &str) -> PathBuf {
        let inside = self.mount_dir.path().join(name);
        Path::new(&format!("/proc/{}/root", self.child.id()))
            .join(inside.strip_prefix("/").unwrap())
    }

    /// Bytes of all segment files of partition 0 of [`TOPIC`].
    fn segment_file_bytes(&self) -> u64 {
        let dir = self.in_namespace(&format!("data/{TOPIC}-0"));
        std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.unwrap())
            .filter(|entry| entry.file_name().to_string_lossy().ends_with(".log"))
            .map(|entry| entry.metadata().unwrap().len())
            .sum()
    }

    fn delete_filler(&self) {
        let filler = self.in_namespace("filler");
        std::fs::remove_file(&filler).unwrap_or_else(|e| panic!("{}: {e}", filler.display()));
    }

    /// How the broker ended, if it does within `wait`.
    fn exit_within(&mut self, wait: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Fails the test, with how it ended, if the broker process is gone.
    fn assert_alive(&mut self, case: &str) {
        if let Some(status) = self.child.try_wait().unwrap() {
            panic!(
                "{case}: the broker ended ({status}; a full disk under a sparse mapping \
                 is SIGBUS):\n{}",
                self.log()
            );
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// The refusal counter of partition 0 of [`TOPIC`], scraped from `/metrics`.
    async fn refusals_counted(&self) -> u64 {
        let scrape = async {
            let mut stream = TcpStream::connect(self.metrics_addr).await.unwrap();
            stream
                .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                .await
                .unwrap();
            let mut text = String::new();
            stream.read_to_string(&mut text).await.unwrap();
            text
        };
        let text = tokio::time::timeout(SCRAPE_WAIT, scrape)
            .await
            .expect("the metrics endpoint answered in time");
        text.lines()
            .find(|line| {
                line.starts_with(REFUSALS_METRIC)
                    && line.contains(&format!("topic=\"{TOPIC}\""))
                    && line.contains("partition=\"0\"")
            })
            .and_then(|line| line.split_whitespace().last())
            .and_then(|value| value.parse().ok())
            .unwrap_or_else(|| panic!("no {REFUSALS_METRIC} for {TOPIC}-0 in:\n{text}"))
    }
}

impl Drop for FullDiskBroker {
    fn drop(&mut self) {
        // The namespace, and with it the tmpfs, goes away with its last process.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// True once the broker has logged that it listens and accepts a connection; false if it
/// exited first (a taken port, or no namespace or tmpfs could be made).
async fn wait_ready(child: &mut Child, addr: SocketAddr, log_path: &Path) -> bool {
    let deadline = Instant::now() + READY_WAIT;
    loop {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        let log = std::fs::read_to_string(log_path).unwrap_or_default();
        if log.contains(LISTENING_LOG_LINE) && TcpStream::connect(addr).await.is_ok() {
            return true;
        }
        assert!(
            Instant::now() < deadline,
            "the broker did not accept connections within {READY_WAIT:?}:\n{log}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A loopback address whose port was free a moment ago.
fn free_port() -> SocketAddr {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    probe.local_addr().unwrap()
}
