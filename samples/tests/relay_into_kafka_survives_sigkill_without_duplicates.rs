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

use booblik_samples::engine::LogEngine;
use booblik_samples::support::shutdown::Shutdown;
use relay_support::{
    BATCH, PARTITIONS, booblik, check_payloads, crash_loop, kafka, produce_until, start_broker,
};

const ROUNDS: usize = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Kafka broker (tansu); run by .ci/run with --features kafka -- --ignored"]
async fn a_relay_killed_20_times_loses_nothing_and_duplicates_nothing_into_kafka() {
    let dir = tempfile::tempdir().unwrap();
    let broker = kafka::start(&dir.path().join("kafka"));
    kafka::create_topic(broker.addr(), "mirror", PARTITIONS).await;
    let source = start_broker(&dir.path().join("a"), "events:2").await;
    let engine: Arc<dyn LogEngine> = Arc::new(booblik(&source).await);

    let stop = Shutdown::new();
    let producer = produce_until(engine, "events", stop.clone());
    let offsets = dir.path().join("offsets");
    let source_url = format!("booblik://{}/events", source.local_addr());
    let target_url = format!("kafka://{}/mirror", broker.addr());
    let batch = BATCH.to_string();
    let args = [
        source_url.as_str(),
        target_url.as_str(),
        "--offsets-dir",
        offsets.to_str().unwrap(),
        "--batch-max-records",
        batch.as_str(),
    ];
    let (produced, _, last) = crash_loop(dir.path(), &args, ROUNDS, (producer, stop)).await;
    assert!(produced > 0);
    assert_eq!(last.duplicates, 0, "{last:?}");
    for p in 0..PARTITIONS {
        let read = kafka::read_all(broker.addr(), "mirror", p).await;
        let payloads: Vec<_> = read.into_iter().map(|r| r.payload).collect();
        let landed = check_payloads(&payloads, p, produced);
        assert_eq!(landed.duplicates, 0, "partition {p}: {landed:?}");
        assert_eq!(last.partitions[p as usize].position, produced as i64);
    }
    let tail_resumes = (0..=ROUNDS)
        .map(|round| relay_support::outputs(dir.path(), round).1)
        .map(|log| log.matches("resuming after its tail").count())
        .sum::<usize>();
    eprintln!(
        "produced {produced} per partition; starts that resumed after the target's tail: {tail_resumes}"
    );
}
