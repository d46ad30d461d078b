//! Kafka → booblik under a crash loop: the relay binary is SIGKILLed mid-stream 20 times while
//! a producer keeps writing the Kafka source, then run to the end. Nothing is lost. The
//! position is the Kafka group's committed offset; booblik records carry no headers, so a
//! crash between the appends and the commit writes that batch again: the test counts the
//! duplicates in the target and checks that the relay counted exactly those (none silent,
//! none twice) in the durable total its last summary reports, and that no start found more
//! than one batch. The records are keyless, so Kafka partition p goes to booblik partition p
//! (`p mod 2`) and each partition's order can be checked. Kafka is a `tansu` broker started
//! here (`booblik_samples::support::tansu` says how to install it; without it the test fails).
//!
//! `cargo test -p booblik-samples --features kafka --test relay_out_of_kafka_survives_sigkill_counting_every_duplicate -- --ignored`

#![cfg(feature = "kafka")]

mod relay_support;

use booblik_samples::engine::LogEngine;
use relay_support::{BATCH, PARTITIONS, booblik, check_partition, crash_loop, kafka, start_broker};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Kafka broker (tansu); run by .ci/run with --features kafka -- --ignored"]
async fn a_relay_killed_20_times_loses_nothing_and_counts_every_duplicate_out_of_kafka() {
    let dir = tempfile::tempdir().unwrap();
    let broker = kafka::start_with_topic(dir.path(), "events", PARTITIONS).await;
    let target = start_broker(&dir.path().join("b"), "mirror:2").await;
    let engine = booblik(&target).await;
    let producer = kafka::produce_until(broker.addr(), "events");
    let source_url = format!("kafka://{}/events", broker.addr());
    let target_url = format!("booblik://{}/mirror", target.local_addr());
    let run = crash_loop(dir.path(), &source_url, &target_url, producer).await;
    let (produced, logged, last) = (run.produced, &run.logged, &run.last);
    let mut in_target = 0;
    for p in 0..PARTITIONS {
        let log = engine.open("mirror", p).await.unwrap();
        let landed = check_partition(log.as_ref(), p, produced).await;
        in_target += landed.duplicates;
        assert_eq!(last.partitions[p as usize].position, produced as i64);
    }
    assert_eq!(
        in_target, last.duplicates_total,
        "the target holds {in_target} duplicates, the relay counted {}; logged per start: {logged:?}",
        last.duplicates_total
    );
    for (round, found) in logged.iter().enumerate() {
        let found: u64 = found.values().sum();
        assert!(found <= BATCH as u64, "round {round}: {found} > one batch");
    }
    eprintln!(
        "produced {produced} per partition; duplicates per round and Kafka partition: {logged:?}"
    );
}
