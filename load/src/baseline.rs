//! This machine's floor, measured in the same run as everything else: a 64-byte loopback TCP
//! round trip, raw loopback TCP throughput, the latency of `fsync` on a small write, how fast
//! the page cache takes a new file's pages, and loopback TCP whose receivers store what they
//! read into new files (the least any broker does with a produced byte).
//!
//! Every broker and queue result is reported as a ratio to these numbers, because absolute
//! figures from one machine say little about another; "claim latency is 3× a loopback round
//! trip" travels.

use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::Context;
use hdrhistogram::Histogram;
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::queue::report::median;

/// Bounds of the baseline measurement.
#[derive(Debug, Clone)]
pub struct BaselineConfig {
    /// Round trips timed (after a warm-up of a tenth as many).
    pub round_trips: u32,
    /// Bytes pushed through one loopback connection for throughput.
    pub tcp_bytes: u64,
    /// fsyncs timed.
    pub fsyncs: u32,
    /// Directory for the fsync and page-cache probes: where the brokers under test keep their
    /// data.
    pub fsync_dir: std::path::PathBuf,
    /// Bytes written into a new file for the page-cache probe (0: not measured).
    pub page_cache_bytes: u64,
    /// Bytes pushed, over all connections, in each transfer of the TCP-into-the-page-cache
    /// probe (0: not measured).
    pub tcp_store_bytes: u64,
    /// Idle time before that probe's first transfer ([`TCP_STORE_PAUSE`] by default).
    pub tcp_store_pause: Duration,
}

impl Default for BaselineConfig {
    fn default() -> Self {
        Self {
            round_trips: 20_000,
            tcp_bytes: 2 << 30,
            fsyncs: 200,
            fsync_dir: std::env::temp_dir(),
            page_cache_bytes: DEFAULT_PAGE_CACHE_PROBE_BYTES,
            tcp_store_bytes: DEFAULT_PAGE_CACHE_PROBE_BYTES,
            tcp_store_pause: TCP_STORE_PAUSE,
        }
    }
}

/// The machine's floor.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Baseline {
    /// Median 64-byte loopback TCP round trip, microseconds.
    pub rtt_us_p50: f64,
    /// 99th percentile of the same.
    pub rtt_us_p99: f64,
    /// Median of the same round trip with both ends on **one** thread (a current-thread
    /// runtime): the kernel's loopback path alone, without any cross-thread wake-up. On a VM
    /// whose vCPUs sleep when idle, the two-thread figure above includes waking the other vCPU
    /// and can be several times this one; the two together show which regime a run was in.
    pub rtt_same_thread_us_p50: f64,
    /// Median of the same round trip after an idle pause of [`IDLE_GAP`]: both ends woken from
    /// sleep, as a request arriving at a quiet broker is. On a VM this costs more than a round
    /// trip between busy threads.
    pub rtt_after_idle_us_p50: f64,
    /// One-way loopback TCP throughput, MB/s (10^6 bytes): the median of
    /// [`TCP_THROUGHPUT_TRIALS`] transfers, because one transfer's figure swung 1 498–3 240 MB/s
    /// between invocations in one sitting on one VM, and the large-record target is a ratio to it.
    pub tcp_mb_s: f64,
    /// Median latency of a 4 KiB write + `fsync`, microseconds.
    pub fsync_us_p50: f64,
    /// 99th percentile of the same.
    pub fsync_us_p99: f64,
    /// A new file written with 1 MiB `write`s, no fsync, MB/s (10^6 bytes; NaN if not
    /// measured): how fast this machine's page cache takes new pages — the ceiling of any
    /// broker that writes new data, whatever its code. On a VM whose balloon device reports
    /// free pages to the host (free page reporting), the first write to a page the host took
    /// back costs a fault in the host, so this figure depends on what the guest's memory did
    /// before (288 against 3 777 MB/s for the same 2 GiB written twice on one 2-vCPU VM:
    /// docs/benchmarks.md).
    pub page_cache_write_mb_s: f64,
    /// [`TCP_STORE_CONNECTIONS`] loopback connections, each sending 1 MiB `write`s from one
    /// reused buffer; each receiver reads into one reused 1 MiB buffer and stores what it read
    /// into its own new file with positional writes, no fsync. The file's blocks are reserved
    /// with `fallocate` first (where the file system can), as a MAPPED segment reserves blocks
    /// before it writes to them. No framing, no checksum, no per-record work, no
    /// acknowledgement: the least a broker does with a produced byte, which at least crosses a
    /// socket and lands in new page-cache pages, so a ceiling for this design of pipeline on
    /// this machine at that moment rather than a proof about every broker. MB/s
    /// (10^6 bytes), the median of [`TCP_THROUGHPUT_TRIALS`] transfers back to back, each
    /// taking the memory the one before it freed (NaN if not measured). The large-record target
    /// is a ratio to [`Self::tcp_mb_s`], which takes no new memory.
    pub tcp_store_mb_s: f64,
    /// One transfer of the same probe after [`TCP_STORE_PAUSE`] idle (by default), before the
    /// back-to-back ones. On a VM whose balloon reports free memory to its host, the pause lets
    /// the host take back what the guest freed, and the transfer pays the host's fault on each
    /// new page: about 1 GB/s against 3–4 GB/s back to back on the AMD host of 2026-12-05
    /// (`docs/benchmarks.md` § The large-record ceiling). A broker run meets one or the other
    /// kind of memory, or a mix, depending on what freed memory how long before it.
    pub tcp_store_after_pause_mb_s: f64,
    /// The idle time before that transfer, milliseconds.
    pub tcp_store_pause_ms: u64,
}

/// Bytes the page-cache probe writes by default: about as much as one produce run of the
/// harness writes, so the probe meets the same kind of memory.
pub const DEFAULT_PAGE_CACHE_PROBE_BYTES: u64 = 1 << 30;

/// Transfers of the TCP throughput probe; [`Baseline::tcp_mb_s`] is their median. The
/// TCP-into-the-page-cache probe runs as many.
pub const TCP_THROUGHPUT_TRIALS: usize = 3;

/// Connections of the TCP-into-the-page-cache probe: the large-record target's producers.
pub const TCP_STORE_CONNECTIONS: usize = 4;

/// Default idle time before the TCP-into-the-page-cache probe's first transfer
/// ([`Baseline::tcp_store_after_pause_mb_s`]): twice the 5 s that was enough on the AMD host of
/// 2026-12-05 for the memory freed before it to be taken back by the VM's host.
pub const TCP_STORE_PAUSE: Duration = Duration::from_secs(10);

/// Bytes of one `write` (sender) and one `read` (receiver) in the TCP-into-the-page-cache probe:
/// the batching producer's default `max_batch_bytes`.
const TCP_STORE_CHUNK_BYTES: usize = 1 << 20;

/// Pause before each round trip of the "after idle" measurement.
pub const IDLE_GAP: Duration = Duration::from_millis(2);
/// Round trips timed after an idle pause.
const IDLE_ROUND_TRIPS: u32 = 300;

/// Measures all three.
pub async fn measure(config: BaselineConfig) -> anyhow::Result<Baseline> {
    let (rtt_us_p50, rtt_us_p99) = round_trip(config.round_trips, None).await?;
    let round_trips = config.round_trips;
    let (rtt_same_thread_us_p50, _) = tokio::task::spawn_blocking(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(round_trip(round_trips, None))
    })
    .await??;
    let (rtt_after_idle_us_p50, _) =
        round_trip(IDLE_ROUND_TRIPS.min(config.round_trips), Some(IDLE_GAP)).await?;
    let mut tcp_trials_mb_s = Vec::with_capacity(TCP_THROUGHPUT_TRIALS);
    for _ in 0..TCP_THROUGHPUT_TRIALS {
        tcp_trials_mb_s.push(throughput(config.tcp_bytes).await?);
    }
    let tcp_mb_s = median(&tcp_trials_mb_s);
    let dir = config.fsync_dir.clone();
    let (fsync_us_p50, fsync_us_p99) =
        tokio::task::spawn_blocking(move || fsync_latency(config.fsyncs, &dir)).await??;
    let page_cache_write_mb_s = match config.page_cache_bytes {
        0 => f64::NAN,
        bytes => {
            let dir = config.fsync_dir.clone();
            tokio::task::spawn_blocking(move || page_cache_write(bytes, &dir)).await??
        }
    };
    let (tcp_store_after_pause_mb_s, tcp_store_mb_s) = match config.tcp_store_bytes {
        0 => (f64::NAN, f64::NAN),
        bytes => {
            tokio::time::sleep(config.tcp_store_pause).await;
            let dir = config.fsync_dir.clone();
            tokio::task::spawn_blocking(move || {
                let after_pause_mb_s = tcp_into_page_cache(bytes, &dir)?;
                let mut trials_mb_s = Vec::with_capacity(TCP_THROUGHPUT_TRIALS);
                for _ in 0..TCP_THROUGHPUT_TRIALS {
                    trials_mb_s.push(tcp_into_page_cache(bytes, &dir)?);
                }
                anyhow::Ok((after_pause_mb_s, median(&trials_mb_s)))
            })
            .await??
        }
    };
    Ok(Baseline {
        rtt_us_p50,
        rtt_us_p99,
        rtt_same_thread_us_p50,
        rtt_after_idle_us_p50,
        tcp_mb_s,
        fsync_us_p50,
        fsync_us_p99,
        page_cache_write_mb_s,
        tcp_store_mb_s,
        tcp_store_after_pause_mb_s,
        tcp_store_pause_ms: u64::try_from(config.tcp_store_pause.as_millis()).unwrap_or(u64::MAX),
    })
}

/// Ping-pong of 64-byte messages over loopback, with `TCP_NODELAY` as the broker uses; with a
/// pause of `gap` before each one when given.
async fn round_trip(count: u32, gap: Option<Duration>) -> anyhow::Result<(f64, f64)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let echo = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await?;
        s.set_nodelay(true)?;
        let mut buf = [0u8; 64];
        loop {
            if s.read_exact(&mut buf).await.is_err() {
                return anyhow::Ok(());
            }
            s.write_all(&buf).await?;
        }
    });
    let mut s = TcpStream::connect(addr).await?;
    s.set_nodelay(true)?;
    let mut hist = Histogram::<u64>::new(3)?;
    let msg = [7u8; 64];
    let mut back = [0u8; 64];
    for i in 0..count + count / 10 {
        if let Some(gap) = gap {
            tokio::time::sleep(gap).await;
        }
        let started = Instant::now();
        s.write_all(&msg).await?;
        s.read_exact(&mut back).await?;
        if i >= count / 10 {
            hist.record(started.elapsed().as_nanos() as u64)?;
        }
    }
    drop(s);
    echo.await??;
    Ok((
        hist.value_at_quantile(0.5) as f64 / 1_000.0,
        hist.value_at_quantile(0.99) as f64 / 1_000.0,
    ))
}

/// One connection, 256 KiB writes, the reader discarding: the ceiling for any byte stream on
/// this machine, FETCH included. Returns MB/s (10^6 bytes).
pub async fn throughput(total: u64) -> anyhow::Result<f64> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let sink = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await?;
        let mut buf = vec![0u8; 256 * 1024];
        let mut got = 0u64;
        loop {
            let n = s.read(&mut buf).await?;
            if n == 0 {
                return anyhow::Ok(got);
            }
            got += n as u64;
        }
    });
    let mut s = TcpStream::connect(addr).await?;
    let chunk = vec![1u8; 256 * 1024];
    let started = Instant::now();
    let mut sent = 0u64;
    while sent < total {
        s.write_all(&chunk).await?;
        sent += chunk.len() as u64;
    }
    s.shutdown().await?;
    let got = sink.await??;
    let secs = started.elapsed().as_secs_f64();
    anyhow::ensure!(got == sent, "sink received {got} of {sent} bytes");
    Ok(sent as f64 / secs / 1e6)
}

/// 4 KiB appended then `fsync`ed, in a temporary directory under `parent` (where the brokers
/// started by the harness keep their data, so the same filesystem).
fn fsync_latency(count: u32, parent: &std::path::Path) -> anyhow::Result<(f64, f64)> {
    let dir = tempfile::tempdir_in(parent).context("temp dir for the fsync probe")?;
    let mut file = std::fs::File::create(dir.path().join("probe"))?;
    let block = [0u8; 4096];
    let mut hist = Histogram::<u64>::new(3)?;
    for _ in 0..count {
        let started = Instant::now();
        file.write_all(&block)?;
        file.sync_data()?;
        hist.record(started.elapsed().as_nanos() as u64)?;
    }
    Ok((
        hist.value_at_quantile(0.5) as f64 / 1_000.0,
        hist.value_at_quantile(0.99) as f64 / 1_000.0,
    ))
}

/// `total` bytes written into a new file under `parent` with 1 MiB `write`s, not synced;
/// returns MB/s (10^6 bytes). The file is removed at once.
fn page_cache_write(total: u64, parent: &std::path::Path) -> anyhow::Result<f64> {
    let dir = tempfile::tempdir_in(parent).context("temp dir for the page-cache probe")?;
    let mut file = std::fs::File::create(dir.path().join("probe"))?;
    let chunk = vec![1u8; 1 << 20];
    let started = Instant::now();
    let mut written = 0u64;
    while written < total {
        file.write_all(&chunk)?;
        written += chunk.len() as u64;
    }
    Ok(written as f64 / started.elapsed().as_secs_f64() / 1e6)
}

/// One transfer of the TCP-into-the-page-cache probe ([`Baseline::tcp_store_mb_s`]): `total`
/// bytes over [`TCP_STORE_CONNECTIONS`] loopback connections, each receiver storing into its
/// own new file under `parent`. Blocking threads, not the runtime: the probe is the floor of the
/// work, not of a scheduler. Returns MB/s (10^6 bytes); the files are removed at once.
fn tcp_into_page_cache(total: u64, parent: &std::path::Path) -> anyhow::Result<f64> {
    use std::io::Read;
    use std::os::unix::fs::FileExt;

    let dir = tempfile::tempdir_in(parent).context("temp dir for the TCP-store probe")?;
    let per_connection = total.div_ceil(TCP_STORE_CONNECTIONS as u64);
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    // Connect and open every file first, so the clock times only the transfer.
    let mut pairs = Vec::with_capacity(TCP_STORE_CONNECTIONS);
    for i in 0..TCP_STORE_CONNECTIONS {
        let sender = std::net::TcpStream::connect(addr)?;
        sender.set_nodelay(true)?;
        let (receiver, _) = listener.accept()?;
        let file = std::fs::File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(dir.path().join(format!("store-{i}")))?;
        // Where the file system cannot reserve, the broker writes into a sparse file (with a
        // warning); so does the probe.
        match rustix::fs::fallocate(
            &file,
            rustix::fs::FallocateFlags::empty(),
            0,
            per_connection,
        ) {
            Ok(()) | Err(rustix::io::Errno::OPNOTSUPP | rustix::io::Errno::NOSYS) => {}
            Err(errno) => {
                return Err(std::io::Error::from(errno))
                    .context("reserving the TCP-store probe's file");
            }
        }
        pairs.push((sender, receiver, file));
    }
    let started = Instant::now();
    let (sent, stored) = std::thread::scope(|scope| {
        let mut senders = Vec::with_capacity(TCP_STORE_CONNECTIONS);
        let mut receivers = Vec::with_capacity(TCP_STORE_CONNECTIONS);
        for (mut sender, mut receiver, file) in pairs {
            senders.push(scope.spawn(move || {
                let chunk = vec![1u8; TCP_STORE_CHUNK_BYTES];
                let mut sent = 0u64;
                while sent < per_connection {
                    let len = usize::try_from(per_connection - sent)
                        .map_or(chunk.len(), |left| left.min(chunk.len()));
                    sender.write_all(&chunk[..len])?;
                    sent += len as u64;
                }
                anyhow::Ok(sent)
            }));
            receivers.push(scope.spawn(move || {
                let mut buf = vec![0u8; TCP_STORE_CHUNK_BYTES];
                let mut stored = 0u64;
                loop {
                    let n = receiver.read(&mut buf)?;
                    if n == 0 {
                        return anyhow::Ok(stored);
                    }
                    file.write_all_at(&buf[..n], stored)?;
                    stored += n as u64;
                }
            }));
        }
        // A failed sender closes its connection, and its receiver then sees a short stream:
        // report the sender's error, not the shortfall it caused.
        let sent = senders
            .into_iter()
            .map(|s| s.join().expect("a TCP-store sender panicked"))
            .sum::<anyhow::Result<u64>>();
        let stored = receivers
            .into_iter()
            .map(|r| r.join().expect("a TCP-store receiver panicked"))
            .sum::<anyhow::Result<u64>>();
        (sent, stored)
    });
    let secs = started.elapsed().as_secs_f64();
    let sent = sent.context("a TCP-store probe sender")?;
    let stored = stored.context("a TCP-store probe receiver")?;
    anyhow::ensure!(
        stored == sent,
        "the TCP-store probe stored {stored} of the {sent} bytes sent"
    );
    Ok(stored as f64 / secs / 1e6)
}
