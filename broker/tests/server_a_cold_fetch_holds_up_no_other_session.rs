//! A FETCH whose bytes are not in the page cache waits for the disk on tokio's blocking pool, not
//! on a runtime thread: while more such FETCHes than the runtime has threads are stuck on a slow
//! disk (held by a test hook), another session is still answered at once — in both FETCH modes.
//! Had the cold reads run on the runtime threads, the answer would only come after the hold.
//! The long poll's lookup of its record is such a read too, and goes the same way.

mod support;

use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use booblik_broker::FetchMode;
use booblik_broker::storage::{Partition, WriteMode};
use booblik_protocol::{AckPolicy, LongPoll};
use rustix::fs::Advice;
use support::{ANSWER_TIMEOUT, RawConn, TestBroker, fetch_request, payloads, produce_request};

/// More than the runtime's worker threads (2, below): inline reads would hold them all.
const COLD_FETCHES: usize = 4;
/// How long the hook holds the cold reads at most (longer than any wait of the test, so a
/// failure reports what it saw during the hold); the other session's answer must come first.
const HOLD: Duration = Duration::from_secs(30);
/// The cold FETCHes start this far apart in the log. A FETCH that misses the page cache starts
/// readahead (the kernel does, even for a read that does not wait), up to the device's
/// `read_ahead_kb` — 8 MiB on the test machines — so nearer starts could find their bytes
/// brought in by another FETCH's miss, be served from the cache, and never reach the gate.
const BYTES_APART: usize = 10 * 1024 * 1024;
/// Bytes of records in one PRODUCE (4 MiB), below the frame limit.
const BYTES_PER_PRODUCE: usize = 4 * 1024 * 1024;

/// What the cold FETCHes read.
#[derive(Debug, Clone, Copy)]
struct Shape {
    record_bytes: usize,
    /// Added to each FETCH's start offset: with small records, an offset past a sparse index
    /// entry makes finding the record a walk over length prefixes, which reads the disk too.
    offset_past_start: usize,
    max_bytes: i32,
    /// A FETCH v2 long poll (whose bytes are there already): it locates its record before it
    /// would wait, and that lookup is the cold read.
    long_poll: bool,
}

/// 8 KiB records: every record has an index entry, so only the payload read is cold.
const LARGE_RECORDS: Shape = Shape {
    record_bytes: 8 * 1024,
    offset_past_start: 0,
    max_bytes: 64 * 1024,
    long_poll: false,
};
/// 100-byte records, fetched one at a time from offsets between index entries (one per 4 KiB):
/// the walk to the record is cold. The walk reads the bytes around the record, so its payload
/// is cached afterwards: here only a walk done off the runtime reaches the gate, and a walk
/// done on a runtime thread fails the test.
const SMALL_RECORDS: Shape = Shape {
    record_bytes: 100,
    offset_past_start: 7,
    max_bytes: 108,
    long_poll: false,
};

/// Holds the partition's cold reads on a thread of its own until `release` says so or [`HOLD`]
/// has passed; returns when the hold is armed. The flag tells whether the hold has ended.
fn hold_cold_reads(
    partition: Arc<Partition>,
) -> (mpsc::Sender<()>, Arc<std::sync::atomic::AtomicBool>) {
    let (release, released_rx) = mpsc::channel::<()>();
    let (armed_tx, armed) = mpsc::channel::<()>();
    let ended = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ended_flag = Arc::clone(&ended);
    std::thread::spawn(move || {
        let hold = partition.test_hooks().hold_cold_reads();
        armed_tx.send(()).unwrap();
        let _ = released_rx.recv_timeout(HOLD);
        ended_flag.store(true, std::sync::atomic::Ordering::SeqCst);
        drop(hold);
    });
    armed.recv().unwrap();
    (release, ended)
}

/// Drops the pages of every file in the partition's directory from the page cache. The records
/// were fsynced (FORCED), so their pages are clean and the kernel drops them. DONTNEED skips a
/// page that is busy at that moment (seen while other writes flood the same disk), so it is
/// issued a few times, as the storage's unit tests do.
fn evict_partition_files(dir: &std::path::Path) {
    for _ in 0..5 {
        for entry in std::fs::read_dir(dir.join("solo-0")).unwrap() {
            let file = std::fs::File::open(entry.unwrap().path()).unwrap();
            rustix::fs::fadvise(&file, 0, None, Advice::DontNeed).unwrap();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

async fn other_sessions_are_answered_while_cold_fetches_wait_for_the_disk(
    mode: FetchMode,
    shape: Shape,
) {
    // FILE mode: no mapping keeps the active segment's pages in memory.
    let broker = TestBroker::start_with(|config| {
        config.fetch_mode = mode;
        config.storage.write_mode = WriteMode::File;
        config.storage.segment_bytes = 64 * 1024 * 1024;
    })
    .await;
    let records_apart = BYTES_APART / (shape.record_bytes + 8);
    let records: Vec<Vec<u8>> = (0..COLD_FETCHES * records_apart)
        .map(|i| vec![(i % 251) as u8; shape.record_bytes])
        .collect();
    let mut writer = broker.connect().await;
    for chunk in records.chunks(BYTES_PER_PRODUCE / shape.record_bytes) {
        let refs: Vec<&[u8]> = chunk.iter().map(Vec::as_slice).collect();
        writer
            .call(&produce_request(1, "solo", 0, AckPolicy::Forced, &refs))
            .await
            .produce();
    }
    evict_partition_files(broker.dir.path());

    let partition = Arc::clone(broker.broker.storage().partition("solo", 0).unwrap());
    let (release, hold_ended) = hold_cold_reads(Arc::clone(&partition));
    let mut fetchers = Vec::new();
    for n in 0..COLD_FETCHES {
        let mut conn = broker.connect().await;
        let offset = (n * records_apart + shape.offset_past_start) as i64;
        fetchers.push(tokio::spawn(async move {
            let long_poll = shape.long_poll.then_some(LongPoll {
                max_wait_ms: 30_000,
                min_bytes: 1,
            });
            let request = fetch_request(8, "solo", 0, offset, shape.max_bytes, long_poll);
            let fetched = conn.call(&request).await;
            (offset as usize, payloads(&fetched.fetch()))
        }));
    }
    let deadline = Instant::now() + ANSWER_TIMEOUT;
    loop {
        let held = partition.test_hooks().cold_reads_held();
        if held == COLD_FETCHES {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{mode:?} {shape:?}: only {held} of {COLD_FETCHES} FETCHes reached the cold-read \
             gate (this test needs a filesystem that drops clean pages on POSIX_FADV_DONTNEED \
             and reads with RWF_NOWAIT: ext4, XFS, btrfs; not tmpfs)"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    // Another session: METADATA, an append, and a FETCH of the appended (cached) record.
    let mut other = RawConn::connect(broker.broker.local_addr()).await;
    other.metadata(&["solo"]).await.expect_ok();
    let appended = other.produce("solo", 0, &[b"while the disk is slow"]).await;
    let fetched = other
        .fetch("solo", 0, appended.base_offset, 1024)
        .await
        .fetch();
    assert_eq!(payloads(&fetched), vec![b"while the disk is slow".to_vec()]);
    assert!(
        !hold_ended.load(std::sync::atomic::Ordering::SeqCst),
        "{mode:?} {shape:?}: the other session was answered only after the cold reads were let go"
    );
    assert_eq!(
        partition.test_hooks().cold_reads_held(),
        COLD_FETCHES,
        "{mode:?}: the cold reads were still held while the other session was served"
    );

    release.send(()).unwrap();
    let whole_records = shape.max_bytes as usize / (shape.record_bytes + 8);
    for fetcher in fetchers {
        let (offset, got) = fetcher.await.unwrap();
        assert_eq!(
            got,
            records[offset..offset + whole_records],
            "{mode:?}: the bytes on disk from offset {offset}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_zero_copy_fetch_holds_up_no_other_session() {
    other_sessions_are_answered_while_cold_fetches_wait_for_the_disk(
        FetchMode::ZeroCopy,
        LARGE_RECORDS,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_heap_fetch_holds_up_no_other_session() {
    other_sessions_are_answered_while_cold_fetches_wait_for_the_disk(
        FetchMode::Heap,
        LARGE_RECORDS,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_walk_to_a_small_record_holds_up_no_other_session() {
    other_sessions_are_answered_while_cold_fetches_wait_for_the_disk(
        FetchMode::ZeroCopy,
        SMALL_RECORDS,
    )
    .await;
}

/// The long poll's lookup goes through the same bounded dispatcher as every other cold read:
/// it reaches the cold-read gate (so it holds one of the `MAX_CONCURRENT_COLD_READS` permits and
/// is counted). A lookup sent to the blocking pool past the dispatcher would never reach the
/// gate, and the walk it cached would let the FETCH's own lookup pass the gate by too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_polls_cold_walk_goes_through_the_bounded_dispatcher_and_holds_up_no_other_session()
{
    other_sessions_are_answered_while_cold_fetches_wait_for_the_disk(
        FetchMode::ZeroCopy,
        Shape {
            long_poll: true,
            ..SMALL_RECORDS
        },
    )
    .await;
}
