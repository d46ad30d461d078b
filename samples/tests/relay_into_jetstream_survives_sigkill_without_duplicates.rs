//! booblik → JetStream under a crash loop: the relay binary is SIGKILLed mid-stream 20 times, on a 3-node cluster with R3 streams,
//! while a producer keeps writing the source, then run to the end. Nothing is lost, and the
//! target holds **no** duplicate: every relayed record carries its source position in headers,
//! and a restarting relay resumes after the target stream's tail. The target streams are made
//! here with the shortest duplicate window the server takes (100 ms), shorter than any restart
//! of the loop (each run lives 150 ms or more), so `Nats-Msg-Id` cannot be what keeps duplicates
//! out: the tail read must.
//!
//! Needs `nats-server` (`apt-get install nats-server`): `#[ignore]`d in the plain test run, run
//! by `.ci/run` with `--ignored`, and locally with
//! `cargo test -p booblik-samples --test relay_into_jetstream_survives_sigkill_without_duplicates -- --ignored`.

mod relay_support;

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::stream;
use booblik_samples::engine::jetstream::naming;
use booblik_samples::engine::{JetStreamEngine, LogEngine};
use booblik_samples::support::nats_cluster::NatsCluster;
use relay_support::{
    PARTITIONS, booblik, check_partition, crash_loop, jetstream_url, produce_until, start_broker,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nats-server; run by .ci/run with --ignored"]
async fn a_relay_killed_20_times_loses_nothing_and_duplicates_nothing_into_jetstream() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = NatsCluster::start(&dir.path().join("nats"), 3).unwrap();
    let nats = JetStreamEngine::connect(&cluster.urls()).await.unwrap();
    nats.wait_ready(Duration::from_secs(30)).await.unwrap();
    for p in 0..PARTITIONS {
        nats.context()
            .create_stream(stream::Config {
                name: naming::stream_name("mirror", p).unwrap(),
                subjects: vec![naming::subject("mirror", p).unwrap()],
                storage: stream::StorageType::File,
                num_replicas: 3,
                duplicate_window: Duration::from_millis(100),
                allow_direct: true,
                ..Default::default()
            })
            .await
            .unwrap();
    }
    // A new R3 stream answers once its replicas elected a leader.
    for p in 0..PARTITIONS {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while async { nats.open("mirror", p).await?.bounds().await }
            .await
            .is_err()
        {
            assert!(
                std::time::Instant::now() < deadline,
                "mirror/{p}: no stream leader"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let broker = start_broker(&dir.path().join("broker"), "events:2").await;
    let producer = produce_until(Arc::new(booblik(&broker).await), "events");
    let source_url = format!("booblik://{}/events", broker.local_addr());
    let target_url = jetstream_url(&cluster, "mirror");
    let run = crash_loop(dir.path(), &source_url, &target_url, producer).await;
    assert_eq!(run.last.duplicates, 0, "{:?}", run.last);
    for p in 0..PARTITIONS {
        let log = nats.open("mirror", p).await.unwrap();
        let landed = check_partition(log.as_ref(), p, run.produced).await;
        assert_eq!(landed.duplicates, 0, "partition {p}: {landed:?}");
        assert_eq!(
            run.last.partitions[p as usize].position,
            run.produced as i64
        );
    }
    eprintln!(
        "starts that resumed after the target's tail: {}",
        run.tail_resumes
    );
}
