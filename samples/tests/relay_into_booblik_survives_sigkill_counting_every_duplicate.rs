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
use booblik_samples::support::shutdown::Shutdown;
use relay_support::{
    BATCH, PARTITIONS, booblik, check_partition, crash_loop, produce_until, start_broker,
};

const ROUNDS: usize = 20;

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
    let source: Arc<dyn LogEngine> = Arc::new(nats.clone());
    let broker = start_broker(&dir.path().join("broker"), "mirror:2").await;
    let target = booblik(&broker).await;

    let stop = Shutdown::new();
    let producer = produce_until(source, "events", stop.clone());
    let offsets = dir.path().join("offsets");
    let source_url = relay_support::jetstream_url(&cluster, "events");
    let target_url = format!("booblik://{}/mirror", broker.local_addr());
    let batch = BATCH.to_string();
    let args = [
        source_url.as_str(),
        target_url.as_str(),
        "--offsets-dir",
        offsets.to_str().unwrap(),
        "--batch-max-records",
        batch.as_str(),
    ];
    let (produced, logged, last) = crash_loop(dir.path(), &args, ROUNDS, (producer, stop)).await;
    assert!(produced > 0);
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
