//! A tiny queue run (3 workers, 30 tasks) through the binary: the JSON report carries every
//! key of the experiment's contract, every task is completed, and no effect is duplicated. The
//! broker ran in a child process, as the peers' servers do.

mod support;

use support::{assert_baseline, integer, number, run_report};

#[test]
fn a_tiny_queue_run_completes_every_task_exactly_once() {
    // Rendezvous runs at protocol level 2: its heartbeats and releases share the claims log
    // with the claims the report counts.
    for pick in ["random", "rendezvous"] {
        a_tiny_run_with_pick(pick, "mapped");
    }
    // The broker's other write mode, by the harness's flag.
    a_tiny_run_with_pick("random", "file");
}

fn a_tiny_run_with_pick(pick: &str, write_mode: &str) {
    let dir = tempfile::tempdir().unwrap();
    let report = run_report(
        dir.path(),
        &[
            "queue",
            "--write-mode",
            write_mode,
            "--workers",
            "3",
            "--pick",
            pick,
            "--arrival",
            "backlog",
            "--tasks",
            "30",
            "--work-ms",
            "5",
            "--max-run-s",
            "20",
            "--repetitions",
            "1",
            "--no-extra-queue-runs",
            "--pool",
            "1",
        ],
    );
    assert_baseline(&report);
    let runs = report["runs"].as_array().expect("runs is an array");
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run["kind"], "queue");
    assert_eq!(run["system"], "booblik");
    // Like the peers' servers, the broker runs in a process of its own unless told otherwise.
    assert_eq!(run["broker_process"], "child");
    assert_eq!(run["broker_write_mode"], write_mode);
    assert_eq!(run["claim_ack"], "forced");
    assert!(run["chaos"].is_null());
    assert_eq!(integer(run, "pool"), 1);
    assert_eq!(integer(run, "work_ms"), 5);
    assert_eq!(run["workers"], 3);
    assert_eq!(run["pick"], pick);
    assert_eq!(run["arrival"], "backlog");
    for key in ["p50", "p90", "p99", "p999", "max"] {
        let value = number(&run["claim_latency_us"], key);
        assert!(value > 0.0, "claim_latency_us.{key} = {value}");
    }
    for key in [
        "attempts",
        "wins",
        "lost_races",
        "attempts_per_task",
        "duplicate_executions",
        "fenced_dones",
        "duplicate_effects",
        "tasks_total",
        "tasks_completed",
        "tasks_never_completed",
        "dead_lettered",
        "tasks_per_s",
        "ceiling_tasks_per_s",
    ] {
        number(run, key);
    }
    assert_eq!(integer(run, "tasks_total"), 30);
    assert_eq!(integer(run, "tasks_completed"), 30);
    assert_eq!(integer(run, "tasks_never_completed"), 0);
    assert_eq!(integer(run, "duplicate_effects"), 0);
    assert_eq!(integer(run, "duplicate_dones"), 0);
    assert_eq!(integer(run, "refused_effects"), 0);
    assert_eq!(integer(run, "effects_committed"), 30);
    assert_eq!(integer(run, "violations"), 0);
    assert!(integer(run, "wins") >= 30);
    assert_eq!(
        integer(run, "attempts"),
        integer(run, "wins") + integer(run, "lost_races") + integer(run, "dead_lettered"),
        "attempts = wins + lost races + dead-letterings"
    );
    assert!(number(run, "tasks_per_s") > 0.0);
    assert!(number(run, "ceiling_tasks_per_s") > 0.0);
}
