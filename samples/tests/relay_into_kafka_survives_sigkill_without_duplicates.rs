//! booblik → Kafka under a crash loop: the relay binary is SIGKILLed mid-stream 20 times while
//! a producer keeps writing the source, then run to the end. Nothing is lost and the Kafka
//! target holds **no** duplicate: every relayed record carries its source position in headers
//! and a restarting relay resumes after the target partition's last record. Kafka's idempotent
//! producer deduplicates only within one producer session, so it cannot be what keeps a
//! restart's re-send out: the tail read must. Kafka is a `tansu` broker started here
//! (`booblik_samples::support::tansu` says how to install it; without it the test fails).
//!
//! `cargo test -p booblik-samples --features kafka --test relay_into_kafka_survives_sigkill_without_duplicates -- --ignored`

#![cfg(feature = "kafka")]

mod relay_support;

use std::sync::Arc;

use relay_support::{
    PARTITIONS, booblik, check_payloads, crash_loop, kafka, produce_until, start_broker,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Kafka broker (tansu); run by .ci/run with --features kafka -- --ignored"]
async fn a_relay_killed_20_times_loses_nothing_and_duplicates_nothing_into_kafka() {
    let dir = tempfile::tempdir().unwrap();
    let broker = kafka::start_with_topic(dir.path(), "mirror", PARTITIONS).await;
    let source = start_broker(&dir.path().join("a"), "events:2").await;
    let producer = produce_until(Arc::new(booblik(&source).await), "events");
    let source_url = format!("booblik://{}/events", source.local_addr());
    let target_url = format!("kafka://{}/mirror", broker.addr());
    let run = crash_loop(dir.path(), &source_url, &target_url, producer).await;
    assert_eq!(run.last.duplicates, 0, "{:?}", run.last);
    for p in 0..PARTITIONS {
        let read = kafka::read_all(broker.addr(), "mirror", p).await;
        let payloads: Vec<_> = read.into_iter().map(|r| r.payload).collect();
        let landed = check_payloads(&payloads, p, run.produced);
        assert_eq!(landed.duplicates, 0, "partition {p}: {landed:?}");
        assert_eq!(
            run.last.partitions[p as usize].position,
            run.produced as i64
        );
    }
    eprintln!(
        "produced {} per partition; starts that resumed after the target's tail: {}",
        run.produced, run.tail_resumes
    );
}
