//! `--work-ms 0,5` runs the scenario once per work time in one invocation, each run labelled
//! with its own work time and actually working it: issue 19's latency targets name 0 ms and
//! 5 ms, and its targets are judged within one invocation.

mod support;

use support::{backlog_queue, integer, number, run_report};

#[test]
fn one_invocation_sweeps_every_work_time_given() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = backlog_queue("30");
    args.extend_from_slice(&["--work-ms", "0,5", "--pool", "1", "--max-run-s", "20"]);
    let report = run_report(dir.path(), &args);
    let runs = report["runs"].as_array().expect("runs is an array");
    let work_ms: Vec<u64> = runs.iter().map(|run| integer(run, "work_ms")).collect();
    assert_eq!(work_ms, [0, 5], "one run per work time, in the order given");
    for run in runs {
        assert_eq!(run["system"], "booblik");
        assert_eq!(integer(run, "tasks_completed"), 30);
        assert_eq!(integer(run, "tasks_never_completed"), 0);
    }
    // 30 tasks of 5 ms on 3 workers take at least 50 ms: a run that only carried the label
    // would finish faster.
    let worked = number(&runs[1], "tasks_per_s");
    assert!(
        worked <= 3.0 * 1_000.0 / 5.0,
        "the 5 ms run finished {worked} tasks/s, more than 3 workers can work"
    );
}
