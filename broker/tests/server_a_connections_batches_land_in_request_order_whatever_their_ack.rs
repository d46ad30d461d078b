//! A connection's batches land in the log in request order, whatever their ack: an ack NONE
//! batch is always queued to the writer thread, while a WRITTEN one right behind it could be
//! appended inline on the session's thread if the partition looked idle. It must not be: a
//! batch is appended inline only when nothing of its partition is queued, so it never
//! overtakes one that is (SPEC §2: a connection's requests are applied in order).
//!
//! Without that rule the WRITTEN batch, a few microseconds behind, would land before the NONE
//! one almost every time: the writer thread takes tens of microseconds to wake.

mod support;

use booblik_protocol::{AckPolicy, RecordScanner};
use support::{TestBroker, produce_request};

/// Rounds of (NONE, WRITTEN) pipelined, then a lone WRITTEN.
const ROUNDS: i32 = 100;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_land_in_request_order_when_none_and_written_alternate() {
    let broker = TestBroker::start().await;
    let partition = std::sync::Arc::clone(broker.broker.storage().partition("solo", 0).unwrap());
    let mut conn = broker.connect().await;

    let request = |n: i32, ack| {
        let mut bytes = Vec::new();
        produce_request(n, "solo", 0, ack, &[n.to_string().as_bytes()]).encode(&mut bytes);
        bytes
    };
    for round in 0..ROUNDS {
        let first = 3 * round;
        // A NONE batch, queued to the writer, and a WRITTEN one right behind it in the same
        // write: the WRITTEN one must wait its turn in the queue.
        let mut pair = request(first, AckPolicy::None);
        pair.extend(request(first + 1, AckPolicy::Written));
        conn.send_raw(&pair).await;
        assert_eq!(conn.recv().await.header.correlation_id, first + 1);
        // With the pair written, the partition is idle: this one goes inline.
        conn.send_raw(&request(first + 2, AckPolicy::Written)).await;
        assert_eq!(conn.recv().await.header.correlation_id, first + 2);
    }

    let slice = partition.read(0, 1 << 20).unwrap();
    let bytes = slice.to_bytes().unwrap();
    let landed: Vec<String> = RecordScanner::new(&bytes)
        .map(|record| String::from_utf8(record.payload.to_vec()).unwrap())
        .collect();
    let sent: Vec<String> = (0..3 * ROUNDS).map(|n| n.to_string()).collect();
    assert_eq!(landed, sent, "the log holds the batches in request order");
    assert!(
        partition.stats().inline_appends > 0,
        "the lone WRITTEN batches found the partition idle (else this test shows nothing)"
    );
}
