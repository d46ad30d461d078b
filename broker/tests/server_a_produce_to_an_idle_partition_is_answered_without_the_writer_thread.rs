//! A WRITTEN or FORCED PRODUCE to an idle partition is appended by the session itself, on its
//! runtime thread, and answered from there: no hand-off to the partition's writer thread and no
//! answer coming back from it (two thread wake-ups, tens of microseconds each on a VM whose
//! idle vCPUs halt: `docs/experiments/claim-hops.md`). A FORCED one is synced on that thread
//! too, and answered only after the fsync.

mod support;

use booblik_protocol::AckPolicy;
use support::{TestBroker, produce_request};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn written_and_forced_produces_to_an_idle_partition_are_appended_by_the_session() {
    let broker = TestBroker::start().await;
    let partition = std::sync::Arc::clone(broker.broker.storage().partition("solo", 0).unwrap());
    let mut conn = broker.connect().await;
    support::idle_after_a_first_produce(&mut conn, &partition).await;
    let before = partition.stats();

    let written = conn
        .call(&produce_request(1, "solo", 0, AckPolicy::Written, &[b"w"]))
        .await
        .produce();
    let forced = conn
        .call(&produce_request(2, "solo", 0, AckPolicy::Forced, &[b"f"]))
        .await
        .produce();
    assert_eq!((written.base_offset, forced.base_offset), (1, 2));

    let after = partition.stats();
    assert_eq!(after.inline_appends - before.inline_appends, 2);
    assert_eq!(after.inline_syncs - before.inline_syncs, 1);
    assert_eq!(
        after.fsyncs - before.fsyncs,
        1,
        "the FORCED answer came after an fsync"
    );
    assert_eq!(after.forced_groups - before.forced_groups, 1);
}
