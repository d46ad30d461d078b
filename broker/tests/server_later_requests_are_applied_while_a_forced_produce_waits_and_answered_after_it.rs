//! While a FORCED PRODUCE waits for its fsync, the requests pipelined after it are applied — a
//! WRITTEN PRODUCE to another partition is in the log, a FETCH and a METADATA see it — but
//! their answers leave only after the FORCED one's: strictly in request order.
//!
//! A session that awaited the FORCED append before reading on would not have written the later
//! batch while the first waits; one that answered as each answer was ready would send the later
//! answers first.

mod support;

use std::time::{Duration, Instant};

use std::sync::Arc;

use booblik_broker::storage::test_io::SimIo;
use booblik_protocol::{AckPolicy, ErrorCode, MetadataRequest, Request, RequestBody};
use support::{ANSWER_TIMEOUT, TestBroker, fetch_request, payloads, produce_request};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn later_requests_are_applied_while_a_forced_produce_waits_and_answered_after_it() {
    let disk = Arc::new(SimIo::new());
    let io = Arc::clone(&disk);
    let broker = TestBroker::start_with(|config| config.storage.io = io).await;
    let storage = broker.broker.storage();
    let solo = std::sync::Arc::clone(storage.partition("solo", 0).unwrap());
    let mut conn = broker.connect().await;

    // The FORCED batch is written and then waits for its fsync, held here; a WRITTEN batch
    // needs none.
    let pause = disk.stall_fsyncs();
    let mut bytes = Vec::new();
    produce_request(10, "events", 0, AckPolicy::Forced, &[b"waits"]).encode(&mut bytes);
    produce_request(11, "solo", 0, AckPolicy::Written, &[b"applied meanwhile"]).encode(&mut bytes);
    fetch_request(12, "solo", 0, 0, 4096, None).encode(&mut bytes);
    produce_request(13, "missing", 0, AckPolicy::Forced, &[b"x"]).encode(&mut bytes);
    Request {
        correlation_id: 14,
        body: RequestBody::Metadata(MetadataRequest::default()),
    }
    .encode(&mut bytes);
    conn.send_raw(&bytes).await;

    // The WRITTEN batch after the waiting FORCED one is applied.
    let deadline = Instant::now() + ANSWER_TIMEOUT;
    while solo.high_watermark() < 1 {
        assert!(
            Instant::now() < deadline,
            "the request after a waiting FORCED PRODUCE was not applied"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // ... yet nothing is answered before the FORCED one.
    let early = tokio::time::timeout(Duration::from_millis(300), conn.try_recv()).await;
    assert!(
        early.is_err(),
        "an answer left before the FORCED answer before it: {early:?}"
    );
    drop(pause);

    let forced = conn.recv().await;
    assert_eq!(forced.header.correlation_id, 10);
    assert_eq!(forced.produce().base_offset, 0);
    let written = conn.recv().await;
    assert_eq!(written.header.correlation_id, 11);
    assert_eq!(written.produce().base_offset, 0);
    let fetched = conn.recv().await;
    assert_eq!(fetched.header.correlation_id, 12);
    assert_eq!(
        payloads(&fetched.fetch()),
        vec![b"applied meanwhile".to_vec()],
        "a FETCH after a PRODUCE of its connection sees it"
    );
    let refused = conn.recv().await;
    assert_eq!(
        (refused.header.correlation_id, refused.header.error_code),
        (13, ErrorCode::UnknownTopicOrPartition)
    );
    let metadata = conn.recv().await;
    assert_eq!(metadata.header.correlation_id, 14);
    let events = &metadata.metadata().topics[0];
    assert_eq!(events.name.as_str(), "events");
    assert_eq!(
        events.partitions[0].high_watermark, 1,
        "a METADATA after a FORCED PRODUCE of its connection sees its record"
    );
}
