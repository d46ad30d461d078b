//! A client producing with ack NONE gets no answers, so nothing backs up on the answer side to
//! stop the session reading; what must stop it is the partition's writer queue. When the
//! writer stalls (a slow disk, dirty-page throttling), a NONE flood must therefore block the
//! client after a bounded amount of memory — not fill the broker's heap with queued batches.
//!
//! The writer is held by a stalled disk (the storage's simulated I/O), the client floods 1 MiB NONE batches
//! without reading, and its writes must block before [`FLOOD_LIMIT_BYTES`], with no more than
//! the storage's `writer_queue_bytes` (set to 64 MiB here; the broker-wide default is 256 MiB)
//! of batches queued for the writer.

mod support;

mod hostile_support;

use std::time::Duration;

use booblik_broker::storage::test_io::SimIo;
use booblik_protocol::{AckPolicy, RECORD_HEADER_BYTES};
use hostile_support::{
    FloodEnd, assert_no_panics, assert_serves, watch_panics, write_until_blocked,
};
use support::{TestBroker, produce_request};
use tokio::net::TcpStream;

/// Payload of each flooded record.
const RECORD_BYTES: usize = 1024 * 1024;
/// The flood fails the test after this many bytes without blocking: far above the kernel's
/// socket buffers (tens of MiB) plus a bounded queue, far below what the broker would hold if
/// it queued without bound.
const FLOOD_LIMIT_BYTES: u64 = 256 * 1024 * 1024;
/// The writer queues' byte budget of this test's broker.
const QUEUE_BUDGET_BYTES: u64 = 64 * 1024 * 1024;
/// A write that makes no progress for this long counts as blocked.
const STALL: Duration = Duration::from_secs(2);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ack_none_flood_blocks_the_client_while_the_writer_is_stalled() {
    watch_panics();
    let disk = std::sync::Arc::new(SimIo::new());
    let broker = TestBroker::start_with(|config| {
        // Room for 1 MiB records.
        config.storage.segment_bytes = 16 * 1024 * 1024;
        config.storage.io = std::sync::Arc::clone(&disk) as _;
        // Well below FLOOD_LIMIT_BYTES, so a bounded queue shows as a blocked client.
        config.storage.writer_queue_bytes = QUEUE_BUDGET_BYTES;
    })
    .await;
    let addr = broker.broker.local_addr();
    let partition = std::sync::Arc::clone(broker.broker.storage().partition("solo", 0).unwrap());
    let record = vec![0x4Eu8; RECORD_BYTES];
    let mut frame = Vec::new();
    produce_request(1, "solo", 0, AckPolicy::None, &[&record]).encode(&mut frame);

    let queue_budget_bytes = broker.broker.storage().config().writer_queue_bytes;
    assert_eq!(queue_budget_bytes, QUEUE_BUDGET_BYTES);

    let (end, written, queued) = {
        // The writer stops inside its first batch's write (the reservation of its blocks).
        let _stalled = disk.stall();
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let (end, written) =
            write_until_blocked(&mut stream, &frame, STALL, FLOOD_LIMIT_BYTES).await;
        let queued = partition.stats().queued_appends;
        eprintln!(
            "ack NONE flood with the writer stalled: {end:?} after {} MiB written; {queued} \
             batches ({} MiB) queued for the writer",
            written / (1024 * 1024),
            queued * RECORD_BYTES / (1024 * 1024)
        );
        (end, written, queued)
    };
    // Counted from the batches themselves, not from the queue's own byte accounting, so a
    // queue that reserved nothing would fail here.
    let queued_bytes = (queued * (RECORD_BYTES + RECORD_HEADER_BYTES)) as u64;
    assert!(
        queued_bytes <= queue_budget_bytes,
        "{queued} NONE batches ({queued_bytes} bytes) were queued while the writer was stalled, \
         more than writer_queue_bytes = {queue_budget_bytes}"
    );
    assert_eq!(
        end,
        FloodEnd::Blocked,
        "{} MiB of NONE batches were taken in while the writer was stalled: the broker queues \
         them without a byte bound",
        written / (1024 * 1024)
    );
    assert_serves(&broker).await;
    assert_no_panics();
}
