//! A short peer run through the binary: the harness starts redis-server (twice: without and with
//! an fsynced AOF) and PostgreSQL (twice: synchronous_commit on and off) itself, runs the same
//! scenario on each beside booblik, and every system completes every task. The JSON carries the
//! fields of the experiment's contract for every run. Timing is not checked.
//!
//! Needs the servers installed (Debian: `apt-get install redis-server postgresql`), hence
//! `#[ignore]`: `.ci/run` installs them and runs this with `--ignored`; locally
//! `cargo test -p booblik-load --test a_short_peer_run_completes_every_task_on_each_peer_server -- --ignored`.

mod support;

use support::{assert_baseline, backlog_queue, integer, number, run_report};

const TASKS: u64 = 40;

#[test]
#[ignore = "needs redis-server and PostgreSQL installed; .ci/run installs them"]
fn a_short_peer_run_completes_every_task_on_each_peer_server() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = TASKS.to_string();
    let mut args = backlog_queue(&tasks);
    args.extend_from_slice(&[
        "--peers",
        "redis,redis-fsync,postgres,postgres-async",
        "--work-ms",
        "5",
        "--max-run-s",
        "30",
        "--pool",
        "1",
    ]);
    let report = run_report(dir.path(), &args);
    assert_baseline(&report);
    let runs = report["runs"].as_array().expect("runs is an array");
    let systems: Vec<&str> = runs
        .iter()
        .map(|r| r["system"].as_str().expect("system is a string"))
        .collect();
    assert_eq!(
        systems,
        [
            "booblik",
            "redis",
            "redis-fsync",
            "postgres",
            "postgres-async"
        ]
    );
    for run in runs {
        let system = run["system"].as_str().unwrap();
        assert_eq!(run["kind"], "queue", "{system}");
        assert_eq!(integer(run, "work_ms"), 5, "{system}");
        assert_eq!(integer(run, "pool"), 1, "{system}");
        assert_eq!(integer(run, "repetition"), 0, "{system}");
        assert!(run["chaos"].is_null(), "{system}: chaos = {}", run["chaos"]);
        assert!(
            run.get("claim_ack").is_some(),
            "{system}: claim_ack is kept"
        );
        assert_eq!(integer(run, "tasks_total"), TASKS, "{system}");
        assert_eq!(integer(run, "tasks_completed"), TASKS, "{system}");
        assert_eq!(integer(run, "tasks_never_completed"), 0, "{system}");
        assert_eq!(integer(run, "refused_effects"), 0, "{system}");
        assert_eq!(integer(run, "duplicate_effects"), 0, "{system}");
        assert_eq!(integer(run, "effects_committed"), TASKS, "{system}");
        assert!(integer(run, "wins") >= TASKS, "{system}");
        assert!(
            integer(run, "claim_latency_samples") > 0,
            "{system}: claim latencies recorded"
        );
        assert!(number(&run["claim_latency_us"], "p50") > 0.0, "{system}");
        assert!(number(run, "tasks_per_s") > 0.0, "{system}");
    }
    assert_eq!(runs[0]["claim_ack"], "forced", "booblik's headline ack");
    assert!(runs[1]["claim_ack"].is_null(), "a peer has no booblik ack");
}
