//! An append the log cannot take (here: its fsync fails, poisoning the partition) closes the
//! connection once the answers before it are written. The requests pipelined after it were
//! applied — the session does not wait for an fsync before applying the next request — but are
//! never answered: the client fails them all (`docs/broker.md` § Errors the protocol cannot
//! name).
//!
//! The fsync failure is injected through the storage's I/O seam (`SimIo::fail_next_fsync`,
//! with the fsync held by `SimIo::stall_fsyncs` until the later request is applied). The
//! requests around the failing one are WRITTEN, so its fsync is the only one.

mod support;

use std::time::{Duration, Instant};

use std::sync::Arc;

use booblik_broker::storage::test_io::SimIo;
use booblik_protocol::AckPolicy;
use support::{ANSWER_TIMEOUT, TestBroker, produce_request};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poisoned_partition_closes_the_connection_after_the_earlier_answers() {
    let disk = Arc::new(SimIo::new());
    let io = Arc::clone(&disk);
    let broker = TestBroker::start_with(|config| config.storage.io = io).await;
    let storage = broker.broker.storage();
    let doomed = std::sync::Arc::clone(storage.partition("events", 0).unwrap());
    let after = std::sync::Arc::clone(storage.partition("events", 1).unwrap());
    let mut conn = broker.connect().await;

    disk.fail_next_fsync();
    // Held until the later request is applied, so the test does not depend on how fast the
    // failure comes back.
    let pause = disk.stall_fsyncs();
    let mut bytes = Vec::new();
    produce_request(1, "solo", 0, AckPolicy::Written, &[b"answered"]).encode(&mut bytes);
    produce_request(2, "events", 0, AckPolicy::Forced, &[b"its fsync fails"]).encode(&mut bytes);
    produce_request(
        3,
        "events",
        1,
        AckPolicy::Written,
        &[b"applied, never answered"],
    )
    .encode(&mut bytes);
    conn.send_raw(&bytes).await;

    let first = conn.recv().await;
    assert_eq!(first.header.correlation_id, 1);
    assert_eq!(first.produce().base_offset, 0);
    let deadline = Instant::now() + ANSWER_TIMEOUT;
    while after.high_watermark() < 1 {
        assert!(
            Instant::now() < deadline,
            "the request after a waiting FORCED PRODUCE was not applied"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop(pause);

    assert!(
        conn.closed_without_answer().await,
        "neither the failed append nor the one after it is answered"
    );
    assert!(doomed.stats().poisoned);
    // The other partitions are untouched.
    let mut other = broker.connect().await;
    assert_eq!(other.produce("events", 1, &[b"later"]).await.base_offset, 1);
}
