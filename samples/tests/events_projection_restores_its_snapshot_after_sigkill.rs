//! `projection --snapshot FILE`: killed with SIGKILL at random moments while it folds, the
//! snapshot it leaves always holds a model that is exactly the fold of the log below the
//! positions it holds; restarted, it restores that snapshot (and says so) and catches up to the
//! whole log, with every event counted once.

mod events_support;

use std::time::Duration;

use booblik_samples::events::crosscheck::projection_matches_replay;
use booblik_samples::events::projection::snapshot;
use events_support::Sample;
use rand::Rng;

/// Kill rounds, each after publishing [`EVENTS_PER_ROUND`] more.
const ROUNDS: usize = 5;
const EVENTS_PER_ROUND: u64 = 300;
const MAX_KILL_DELAY: Duration = Duration::from_millis(400);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_projection_restores_a_snapshot_that_agrees_with_its_positions() {
    let dir = tempfile::tempdir().unwrap();
    let broker = events_support::start_broker(&dir.path().join("broker")).await;
    let client = events_support::client(&broker).await;
    let engine = events_support::engine(&client);
    let addr = broker.local_addr().to_string();
    let path = dir.path().join("projection.snapshot.json");
    let path_arg = path.to_str().unwrap().to_owned();
    let start = |stats: &str| {
        let args = [
            "--broker",
            &addr,
            "--snapshot",
            &path_arg,
            "--snapshot-every-ms",
            "20",
            "--stats-bind",
            stats,
        ];
        Sample::start(env!("CARGO_BIN_EXE_projection"), &args, "info")
    };

    let mut saved_events = Vec::new();
    for round in 0..ROUNDS {
        events_support::publish(&client, EVENTS_PER_ROUND, 20, 0).await;
        let projection = start(&events_support::free_addr().to_string());
        let delay = rand::rng().random_range(Duration::from_millis(50)..=MAX_KILL_DELAY);
        tokio::time::sleep(delay).await;
        projection.kill().await;
        let Some(model) = snapshot::load(&path, "events").unwrap() else {
            continue; // killed before its first snapshot
        };
        let check = projection_matches_replay(engine.as_ref(), "events", &model)
            .await
            .unwrap();
        assert!(check.passed, "round {round}: {}", check.detail);
        saved_events.push(model.events());
    }
    assert!(
        !saved_events.is_empty(),
        "no round lived long enough to save a snapshot"
    );

    let stats = events_support::free_addr();
    let projection = start(&stats.to_string());
    let total = ROUNDS as u64 * EVENTS_PER_ROUND;
    events_support::wait_for_stats(stats, "the projection to catch up", |s| {
        s["phase"] == "live" && s["events"] == total
    })
    .await;
    let (status, stderr) = projection.terminate().await;
    assert!(status.success(), "{status}\n{stderr}");
    assert!(
        stderr.contains("projection restored from its snapshot"),
        "the restart restored the snapshot:\n{stderr}"
    );
    let last = snapshot::load(&path, "events").unwrap().unwrap();
    assert_eq!(
        last.events(),
        total,
        "a clean stop saves the final snapshot"
    );
    assert!(
        projection_matches_replay(engine.as_ref(), "events", &last)
            .await
            .unwrap()
            .passed
    );
}
