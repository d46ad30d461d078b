//! FORCED PRODUCEs pipelined on one connection to an idle partition are written inline, on the
//! session's own thread, and still share one fsync: the session applies every request it has
//! received before it waits for the first answer's fsync, so that fsync — done on the session's
//! thread — covers them all, and the later answers find their batches covered.
//!
//! A session that synced each inline batch as it applied it (or answered FORCED before an
//! fsync covered it) would make sixteen fsyncs (or none).

mod support;

use booblik_protocol::AckPolicy;
use support::{TestBroker, produce_request};

/// FORCED batches in the pipeline.
const PIPELINED: usize = 16;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_forced_produces_written_inline_share_one_fsync() {
    let broker = TestBroker::start().await;
    let partition = std::sync::Arc::clone(broker.broker.storage().partition("solo", 0).unwrap());
    let mut conn = broker.connect().await;
    support::idle_after_a_first_produce(&mut conn, &partition).await;
    let before = partition.stats();

    let mut bytes = Vec::new();
    for id in 0..PIPELINED as i32 {
        let payload = format!("forced {id}");
        produce_request(id, "solo", 0, AckPolicy::Forced, &[payload.as_bytes()]).encode(&mut bytes);
    }
    conn.send_raw(&bytes).await;
    for id in 0..PIPELINED as i32 {
        let answer = conn.recv().await;
        assert_eq!(answer.header.correlation_id, id, "answers in request order");
        assert_eq!(answer.produce().base_offset, i64::from(id) + 1);
    }

    let after = partition.stats();
    assert_eq!(
        after.inline_appends - before.inline_appends,
        PIPELINED as u64,
        "every batch found the partition idle and was written on the session's thread"
    );
    let fsyncs = after.fsyncs - before.fsyncs;
    // One read normally brings all sixteen frames; a split read at most doubles it.
    assert!(
        (1..=2).contains(&fsyncs),
        "{fsyncs} fsyncs for {PIPELINED} pipelined FORCED batches written inline"
    );
    assert_eq!(after.inline_syncs - before.inline_syncs, fsyncs);
}
