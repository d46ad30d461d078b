//! FORCED PRODUCEs pipelined on one connection share fsyncs: the session applies (queues) each
//! one without waiting for the fsync of the one before, so the writer finds them all queued and
//! one fsync covers them. With a session that awaited each FORCED append before reading the
//! next request, only one would ever be queued, and each would get its own fsync.

mod support;

use std::time::{Duration, Instant};

use std::sync::Arc;

use booblik_broker::storage::test_io::SimIo;
use booblik_protocol::AckPolicy;
use support::{ANSWER_TIMEOUT, TestBroker, produce_request};

/// FORCED batches in the pipeline.
const PIPELINED: usize = 16;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_forced_produces_on_one_connection_share_fsyncs() {
    let disk = Arc::new(SimIo::new());
    let io = Arc::clone(&disk);
    let broker = TestBroker::start_with(|config| config.storage.io = io).await;
    let partition = std::sync::Arc::clone(broker.broker.storage().partition("solo", 0).unwrap());
    let mut conn = broker.connect().await;
    // A first append, so nothing left over from opening the partition is counted below.
    conn.call(&produce_request(
        0,
        "solo",
        0,
        AckPolicy::Forced,
        &[b"first"],
    ))
    .await
    .produce();
    let fsyncs_before = partition.stats().fsyncs;

    // Hold the fsyncs: the writer writes the group it took and waits in its fsync, and the
    // session must get every other batch into the writer's queue meanwhile. Each batch is then
    // either written (visible, waiting for the held fsync) or queued (its slot is returned once
    // it is written), whatever the timing.
    let pause = disk.stall_fsyncs();
    let mut bytes = Vec::new();
    for id in 1..=PIPELINED as i32 {
        let payload = format!("forced {id}");
        produce_request(id, "solo", 0, AckPolicy::Forced, &[payload.as_bytes()]).encode(&mut bytes);
    }
    conn.send_raw(&bytes).await;
    let deadline = Instant::now() + ANSWER_TIMEOUT;
    loop {
        let written = (partition.high_watermark() - 1) as usize;
        let reached = written + partition.stats().queued_appends;
        if reached == PIPELINED {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "only {reached} of {PIPELINED} pipelined FORCED batches reached the writer \
             ({written} written, the rest queued): the session waits for each fsync before \
             applying the next request"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop(pause);

    for id in 1..=PIPELINED as i32 {
        let answer = conn.recv().await;
        assert_eq!(answer.header.correlation_id, id, "answers in request order");
        assert_eq!(answer.produce().base_offset, i64::from(id));
    }
    // The first batch's own fsync, then one for the fifteen that queued behind it: a session
    // that waited for each fsync before applying the next request makes sixteen.
    let fsyncs = partition.stats().fsyncs - fsyncs_before;
    assert!(
        fsyncs <= 2,
        "{fsyncs} fsyncs for {PIPELINED} pipelined FORCED batches: they did not share"
    );
}
