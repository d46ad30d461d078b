//! JetStream → booblik under a crash loop: the relay binary is SIGKILLed mid-stream 20 times, on a 3-node cluster with R3 streams,
//! while a producer keeps writing the source, then run to the end. Nothing is lost. booblik
//! records carry no headers, so a crash between a write and its saved position writes that
//! batch again: the test counts the duplicates in the target and checks that the relay counted
//! exactly those (none silent, none twice) in the durable total its last summary reports, and
//! that no start found more than one batch per partition.
//!
//! Needs `nats-server` (`apt-get install nats-server`): `#[ignore]`d in the plain test run, run
//! by `.ci/run` with `--ignored`, and locally with
//! `cargo test -p booblik-samples --test relay_into_booblik_survives_sigkill_counting_every_duplicate -- --ignored`.

mod relay_support;

use std::sync::Arc;
use std::time::Duration;

use booblik_samples::engine::jetstream::StreamSettings;
use booblik_samples::engine::{JetStreamEngine, LogEngine};
use booblik_samples::support::nats_cluster::NatsCluster;
use relay_support::{
    BATCH, PARTITIONS, ROUNDS, booblik, check_partition, crash_loop, jetstream_url, produce_until,
    start_broker,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nats-server; run by .ci/run with --ignored"]
async fn a_relay_killed_20_times_loses_nothing_and_counts_every_duplicate_into_booblik() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = NatsCluster::start(&dir.path().join("nats"), 3).unwrap();
    let nats = JetStreamEngine::connect(&cluster.urls()).await.unwrap();
    nats.wait_ready(Duration::from_secs(30)).await.unwrap();
    let settings = StreamSettings {
        replicas: 3,
        max_age: None,
    };
    // Creates the streams and waits for their leaders.
    booblik_samples::support::cli::ensure_topic(&nats, "events", PARTITIONS, &settings)
        .await
        .unwrap();
    let broker = start_broker(&dir.path().join("broker"), "mirror:2").await;
    let target = booblik(&broker).await;

    let producer = produce_until(Arc::new(nats.clone()), "events");
    let source_url = jetstream_url(&cluster, "events");
    let target_url = format!("booblik://{}/mirror", broker.local_addr());
    let run = crash_loop(dir.path(), &source_url, &target_url, producer).await;
    let (produced, logged, last) = (run.produced, &run.logged, &run.last);
    for p in 0..PARTITIONS {
        let log = target.open("mirror", p).await.unwrap();
        let landed = check_partition(log.as_ref(), p, produced).await;
        let counted = last.partitions[p as usize].duplicates_total;
        assert_eq!(
            landed.duplicates, counted,
            "partition {p}: the target holds {} duplicates, the relay counted {counted}; logged per start: {logged:?}",
            landed.duplicates
        );
        assert!(counted <= (ROUNDS * BATCH) as u64);
        for (round, found) in logged.iter().enumerate() {
            let found = found.get(&p).copied().unwrap_or(0);
            assert!(
                found <= BATCH as u64,
                "round {round}, partition {p}: {found} > one batch"
            );
        }
        // JetStream sequences start at 1: the position after `produced` records is produced + 1.
        assert_eq!(last.partitions[p as usize].position, produced as i64 + 1);
    }
    eprintln!("duplicates per round and partition: {logged:?}");
}
