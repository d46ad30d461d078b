//! The broker's memory per connection is bounded, measured on the real binary's resident set
//! (`VmRSS` in `/proc/<pid>/status`) rather than argued from the code:
//!
//! * clients that pipeline requests without reading answers make the broker stop reading from
//!   them, so however much they try to send, the broker's RSS barely moves;
//! * clients that each send an almost complete frame of the largest size (8 MiB) and then stall
//!   cost the broker about one frame each — the worst case per connection, which is why the
//!   whole-broker bound is `max_connections` × (8 MiB frame + 64 KiB read + 1 MiB waiting
//!   answers + 64 KiB gathered answers + one FETCH payload being written in heap mode or after a
//!   cold read).
//!
//! The bounds asserted are generous (the allocator, the kernel and the runtime add noise); the
//! figures measured are printed and recorded in `docs/reliability.md`. The binary runs as a child
//! process so its stderr can be checked for panics and its RSS is not mixed with the test's.

mod support;

mod crash_support;
mod hostile_support;

use std::time::{Duration, Instant};

use booblik_protocol::{MAX_FRAME_BYTES, MetadataRequest, Request, RequestBody};
use crash_support::BrokerProcess;
use hostile_support::{FloodEnd, assert_serves_at, write_until_blocked};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

const MIB: u64 = 1024 * 1024;
/// Connections flooding at once.
const FLOODERS: usize = 8;
/// Each flooder gives up (and the test fails) after this many bytes without being blocked.
const FLOOD_LIMIT_BYTES: u64 = 256 * MIB;
/// A write that makes no progress for this long counts as blocked.
const STALL: Duration = Duration::from_secs(1);
/// RSS growth allowed for the whole pipelining flood: far below what the flooders managed to
/// write, far above the allocator's noise.
const FLOOD_RSS_GROWTH_LIMIT_KIB: u64 = 64 * 1024;
/// Connections each holding an almost complete maximal frame.
const FRAME_HOLDERS: u64 = 8;
/// Allowed growth per frame holder: the frame itself plus a read chunk, an answer buffer and
/// allocator slack.
const PER_HELD_FRAME_LIMIT_KIB: u64 = (MAX_FRAME_BYTES as u64 + 2 * MIB) / 1024;
/// Allowed growth for the broker as a whole, on top of the per-holder allowance.
const HELD_FRAMES_SLACK_KIB: u64 = 32 * 1024;
/// Time for the broker to read what the frame holders sent: RSS is sampled until it stops
/// growing for `SETTLED`, at most this long.
const SETTLE_LIMIT: Duration = Duration::from_secs(20);
const SETTLED: Duration = Duration::from_millis(500);

fn broker_args() -> [&'static str; 6] {
    // Small segments; file mode so no segment is memory-mapped (mapped pages would count in
    // the RSS of a process that reads its own log).
    [
        "--topics",
        "solo:1,events:1",
        "--write-mode",
        "file",
        "--segment-bytes",
        "1048576",
    ]
}

/// Resident KiB once it stops changing by more than 1 MiB for [`SETTLED`].
async fn settled_rss_kib(broker: &BrokerProcess) -> u64 {
    let deadline = Instant::now() + SETTLE_LIMIT;
    let mut last = broker.memory_kib().rss_kib;
    loop {
        tokio::time::sleep(SETTLED).await;
        let now = broker.memory_kib().rss_kib;
        if now.abs_diff(last) < 1024 || Instant::now() > deadline {
            return now;
        }
        last = now;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelining_floods_leave_the_broker_rss_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("broker.log");
    let mut broker = BrokerProcess::start(&dir.path().join("data"), &log, &broker_args()).await;
    let addr = broker.addr();
    // Warm up every path the flood uses, so their one-time allocations are in the baseline.
    assert_serves_at(addr).await;
    let before = settled_rss_kib(&broker).await;

    let mut request = Vec::new();
    Request {
        correlation_id: 1,
        body: RequestBody::Metadata(MetadataRequest::default()),
    }
    .encode(&mut request);
    let flooders: Vec<_> = (0..FLOODERS)
        .map(|_| {
            let request = request.clone();
            tokio::spawn(async move {
                let mut stream = TcpStream::connect(addr).await.unwrap();
                let (end, written) =
                    write_until_blocked(&mut stream, &request, STALL, FLOOD_LIMIT_BYTES).await;
                (stream, end, written)
            })
        })
        .collect();
    let mut streams = Vec::new();
    let mut written_total = 0u64;
    for flooder in flooders {
        let (stream, end, written) = flooder.await.unwrap();
        assert_eq!(
            end,
            FloodEnd::Blocked,
            "a flooder wrote {written} bytes without being blocked"
        );
        written_total += written;
        streams.push(stream);
    }
    // Every flooder is blocked: the broker holds whatever it is going to hold.
    let during = broker.memory_kib();
    let growth = during.rss_kib.saturating_sub(before);
    eprintln!(
        "{FLOODERS} pipelining flooders wrote {} MiB in total before blocking; broker RSS {} KiB \
         before, {} KiB during (growth {growth} KiB, peak {} KiB)",
        written_total / MIB,
        before,
        during.rss_kib,
        during.peak_rss_kib
    );
    assert!(
        growth < FLOOD_RSS_GROWTH_LIMIT_KIB,
        "the broker grew by {growth} KiB under the flood"
    );
    drop(streams);
    assert!(broker.is_alive());
    assert_serves_at(addr).await;
    broker.assert_no_panic();
    broker.terminate();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_maximal_frames_cost_about_one_frame_each() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("broker.log");
    let mut broker = BrokerProcess::start(&dir.path().join("data"), &log, &broker_args()).await;
    let addr = broker.addr();
    assert_serves_at(addr).await;
    let before = settled_rss_kib(&broker).await;

    // A frame that declares the maximum and is sent whole but for its last byte; the broker
    // must hold it (it cannot be answered before it is complete) until `frame_read_timeout_ms`.
    let mut almost_frame = (MAX_FRAME_BYTES as i32).to_be_bytes().to_vec();
    almost_frame.resize(4 + MAX_FRAME_BYTES - 1, 0x77);
    let mut holders = Vec::new();
    for _ in 0..FRAME_HOLDERS {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(&almost_frame).await.unwrap();
        holders.push(stream);
    }
    let during = settled_rss_kib(&broker).await;
    let growth = during.saturating_sub(before);
    let limit = FRAME_HOLDERS * PER_HELD_FRAME_LIMIT_KIB + HELD_FRAMES_SLACK_KIB;
    eprintln!(
        "{FRAME_HOLDERS} connections holding an 8 MiB frame minus one byte: broker RSS {before} KiB \
         before, {during} KiB while held (growth {growth} KiB, {} KiB per connection; limit \
         {limit} KiB)",
        growth / FRAME_HOLDERS
    );
    assert!(
        growth < limit,
        "held frames cost {growth} KiB, more than one frame per connection"
    );
    // Another client is served while the frames are held.
    assert_serves_at(addr).await;
    drop(holders);
    assert!(broker.is_alive());
    assert_serves_at(addr).await;
    let after = settled_rss_kib(&broker).await;
    eprintln!("after the holders closed: broker RSS {after} KiB");
    broker.assert_no_panic();
    broker.terminate();
}
