//! `demo --engine jetstream` on a 3-node R3 cluster started here; a few seconds in, the node
//! leading partition 0's stream is SIGKILLed (often the meta leader too, and the node the demo's
//! connection was on, and sometimes the leader of the task queue's `tasks` or `claims` stream:
//! the test prints which). The demo still passes every one of its checks: no acknowledged event
//! lost, every follower caught up within the demo's limit and equal to a replay, the projection
//! equal to a fold of the log, and the task queue's — `queue-verify`'s invariants, every
//! completed task's effect in the fencing sink under its completing token, the frozen worker's
//! late effect refused.
//!
//! What it guards against (docs/jetstream.md, "The demo when a node dies"): requests sent right
//! after the kill — stream info during a leader election, creating a cursor the server placed on
//! the dead node — went unanswered for the client's 10 s request timeout each, one after another,
//! and the followers fell minutes behind.
//!
//! Needs `nats-server`: `#[ignore]`d, run by `.ci/run` with `--ignored`
//! (`cargo test -p booblik-samples --test jetstream_demo_passes_its_checks_when_a_node_is_killed_mid_run -- --ignored --nocapture`).

mod events_support;

use std::time::{Duration, Instant};

use booblik_samples::engine::JetStreamEngine;
use booblik_samples::engine::jetstream::naming;
use booblik_samples::support::nats_cluster::{self, NatsCluster};
use events_support::Sample;

/// How long the demo publishes.
const DURATION_S: u64 = 15;
/// When the node is killed, after the demo started: its streams exist and its readers follow.
const KILL_AFTER: Duration = Duration::from_secs(5);
/// The stream whose leader is killed.
const PARTITION: i32 = 0;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nats-server; run by .ci/run with --ignored"]
async fn the_demo_passes_every_check_when_the_node_leading_a_stream_is_killed_mid_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = NatsCluster::start(&dir.path().join("nats"), 3).unwrap();
    let engine = JetStreamEngine::connect(&cluster.urls()).await.unwrap();
    engine.wait_ready(Duration::from_secs(30)).await.unwrap();

    let data_dir = dir.path().join("demo-data");
    let urls = cluster.urls().join(",");
    let duration = DURATION_S.to_string();
    let args = [
        "--engine",
        "jetstream",
        "--nats-url",
        &urls,
        "--data-dir",
        data_dir.to_str().unwrap(),
        "--duration-s",
        &duration,
        "--rate",
        "200",
    ];
    let started = Instant::now();
    let mut demo = Sample::start(env!("CARGO_BIN_EXE_demo"), &args, "warn");

    tokio::time::sleep(KILL_AFTER).await;
    let events_stream = naming::stream_name("events", PARTITION).unwrap();
    let Some(leader) = stream_leader(&engine, &events_stream, &mut demo.child).await else {
        let (status, out, err) = demo.finish().await;
        panic!(
            "partition {PARTITION}'s stream got no leader while the demo ran: exit {status}\nstdout:\n{out}\nstderr:\n{err}"
        );
    };
    // Whether the task queue's streams lose their leader too (then the queue stalls while they
    // elect another: the demo's workers allow for it).
    let mut also_led = Vec::new();
    for topic in ["tasks", "claims"] {
        let stream = naming::stream_name(topic, 0).unwrap();
        if stream_leader(&engine, &stream, &mut demo.child)
            .await
            .as_ref()
            == Some(&leader)
        {
            also_led.push(topic);
        }
    }
    let index = cluster
        .index_of(&leader)
        .expect("the leader is one of ours");
    cluster.kill(index).unwrap();
    let killed_at = started.elapsed();
    assert!(
        killed_at < Duration::from_secs(DURATION_S),
        "the node was killed mid-run, not after it ({killed_at:?})"
    );
    eprintln!(
        "killed {leader}, leader of partition {PARTITION}'s stream (and of the queue's {also_led:?}), {killed_at:?} in"
    );

    let (status, out, err) = demo.finish().await;
    eprintln!("the demo ran {:?}", started.elapsed());
    assert!(
        status.success(),
        "exit {status}\nstdout:\n{out}\nstderr:\n{err}"
    );
    // "all N checks passed": N grows as the demo gains parts (the task queue on JetStream).
    assert!(
        out.lines()
            .any(|line| line.starts_with("all ") && line.ends_with(" checks passed")),
        "{out}\nstderr:\n{err}"
    );
    assert!(!out.contains("FAILED"), "{out}");
    assert!(out.contains("every reader caught up with the log"), "{out}");
    for line in out
        .lines()
        .filter(|l| l.contains("caught up") || l.contains("fencing:"))
    {
        eprintln!("{}", line.trim());
    }
    // The task queue ran on JetStream too and passed its checks.
    assert!(out.contains("ok     task queue verified"), "{out}");
    assert!(out.contains("ok     fencing:"), "{out}");
}

/// The node leading the stream `name`, once the demo created it; `None` when the demo exited
/// first, or after 30 s.
async fn stream_leader(
    engine: &JetStreamEngine,
    name: &str,
    demo: &mut tokio::process::Child,
) -> Option<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let leader = nats_cluster::stream_leader(engine, name).await;
        if leader.is_some() {
            return leader;
        }
        if Instant::now() > deadline || demo.try_wait().unwrap().is_some() {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
