//! On JetStream (a 3-node cluster started here from the installed `nats-server`, the queue's two
//! topics as R3 streams created by `queue-submit`): three workers run, and the leader of the
//! claims stream is SIGKILLed mid-run. Then every submitted task was completed, `queue-verify`
//! passes on the logs read after the failover, the fencing sink holds every effect exactly once,
//! and no worker acted on a lease the log did not give it (every effect's token is a claim the
//! verifier's replay judged won, by that worker, for that task). The same body as on booblik
//! (`engine_samples_support::queue::queue_completes_every_task_through`).
//!
//! The failover stops writes for 6–9 s on this machine kind (`docs/jetstream.md`), so the lease
//! is 20 s: extends every ~6.7 s, a local deadline at 18 s, and every lease held through the
//! outage survives it. Workers retry claims and dones with a growing backoff that spans it.
//!
//! Needs `nats-server`: `#[ignore]`d, run by `.ci/run` with `--ignored`
//! (`cargo test -p booblik-samples --test jetstream_queue_survives_a_killed_claims_stream_leader_with_every_effect_once -- --ignored`).

mod engine_samples_support;

use std::time::Duration;

use booblik_samples::engine::JetStreamEngine;
use booblik_samples::engine::jetstream::naming;
use booblik_samples::support::nats_cluster::NatsCluster;
use engine_samples_support::queue::{connect_with, queue_completes_every_task_through};

/// Longer than the failover's write outage (measured 6–9 s) with room to spare: see the module
/// docs.
const LEASE_MS: u64 = 20_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nats-server; run by .ci/run with --ignored"]
async fn the_queue_completes_every_task_once_when_the_claims_stream_leader_is_killed_mid_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = NatsCluster::start(&dir.path().join("nats"), 3).unwrap();
    let urls = cluster.urls();
    let admin = JetStreamEngine::connect(&urls).await.unwrap();
    admin.wait_ready(Duration::from_secs(30)).await.unwrap();
    let flags = [
        "--engine".to_owned(),
        "jetstream".to_owned(),
        "--nats-url".to_owned(),
        urls.join(","),
    ];
    let connect = connect_with(move || {
        let urls = urls.clone();
        async move {
            JetStreamEngine::connect(&urls)
                .await
                .expect("a worker connects to the cluster")
        }
    });
    let cluster_ref = &mut cluster;
    let admin_ref = &admin;
    queue_completes_every_task_through(&flags, connect, LEASE_MS, || async move {
        let claims = naming::stream_name("claims", 0).unwrap();
        let (leader, index) = cluster_ref
            .kill_stream_leader(admin_ref, &claims)
            .await
            .unwrap();
        eprintln!("killed the claims stream's leader {leader} (node {index})");
    })
    .await;
}
