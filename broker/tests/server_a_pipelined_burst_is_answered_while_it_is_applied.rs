//! A burst of pipelined requests is answered while it is applied, a few answers per write:
//! the applier gives the answerer a turn every `MAX_FRAMES_APPLIED_IN_A_ROW` frames, so the
//! client can refill its window while the broker applies the rest. A session that applied the
//! whole burst before writing any answer would write the burst's answers in one write.
//!
//! Counted with the broker's own metric of answer writes, read from a Prometheus recorder that
//! this test process installs (each integration test file is a process of its own).

mod support;

use std::sync::Arc;
use std::time::Duration;

use booblik_broker::server::MAX_FRAMES_APPLIED_IN_A_ROW;
use booblik_broker::server::metrics::ANSWER_WRITES;
use booblik_protocol::AckPolicy;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use support::{TestBroker, produce_request};
use tokio::time::Instant;

/// PRODUCEs in the burst: several turns' worth, and not a multiple of a turn.
const BURST: usize = 3 * MAX_FRAMES_APPLIED_IN_A_ROW + 1;
/// Longest wait for the writer thread to let go of the partition after the first append.
const IDLE_WAIT: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipelined_burst_is_answered_a_few_answers_per_write() {
    let metrics = PrometheusBuilder::new()
        .install_recorder()
        .expect("the only recorder of this test process");

    let broker = TestBroker::start().await;
    let mut conn = broker.connect().await;
    // A first append, so opening the partition is behind us.
    conn.call(&produce_request(
        0,
        "solo",
        0,
        AckPolicy::Written,
        &[b"first"],
    ))
    .await
    .produce();
    // The burst must find the partition idle, so that every batch is appended inline and its
    // answer is ready at once (a batch queued to the writer is answered later, and takes no
    // turn). The writer lets go of the first batch a moment after answering it.
    let partition = Arc::clone(broker.broker.storage().partition("solo", 0).unwrap());
    let deadline = Instant::now() + IDLE_WAIT;
    while !partition.is_idle() {
        assert!(
            Instant::now() < deadline,
            "the writer did not let go of the first batch"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let inline_before = partition.stats().inline_appends;
    let writes_before = answer_writes(&metrics);

    // The whole burst in one write: the session reads it in one go and could apply it all
    // before answering.
    let mut bytes = Vec::new();
    for id in 1..=BURST as i32 {
        let payload = format!("pipelined {id}");
        produce_request(id, "solo", 0, AckPolicy::Written, &[payload.as_bytes()])
            .encode(&mut bytes);
    }
    conn.send_raw(&bytes).await;
    for id in 1..=BURST as i32 {
        let answer = conn.recv().await;
        assert_eq!(answer.header.correlation_id, id, "answers in request order");
        assert_eq!(answer.produce().base_offset, i64::from(id));
    }

    assert_eq!(
        partition.stats().inline_appends - inline_before,
        BURST as u64,
        "every batch of the burst appended inline (the premise of this test)"
    );
    // One write per turn, and one for the last frame: fewer means the burst's answers waited
    // for later frames to be applied. (A burst read in several pieces only adds writes.)
    let writes = answer_writes(&metrics) - writes_before;
    let turns = BURST.div_ceil(MAX_FRAMES_APPLIED_IN_A_ROW) as u64;
    assert!(
        writes >= turns,
        "{BURST} pipelined answers left in {writes} writes, fewer than the {turns} turns of \
         {MAX_FRAMES_APPLIED_IN_A_ROW} frames: the answerer did not get its turns"
    );
}

/// The broker's count of answer writes so far, from the recorder's Prometheus text.
fn answer_writes(metrics: &PrometheusHandle) -> u64 {
    let text = metrics.render();
    text.lines()
        .find_map(|line| {
            let value = line.strip_prefix(ANSWER_WRITES)?.strip_prefix(' ')?;
            value.parse::<f64>().ok()
        })
        .map_or(0, |value| value as u64)
}
