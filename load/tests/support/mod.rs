//! Running the `booblik-load` binary with a quick baseline and reading its JSON report.

#![allow(dead_code)] // each test file uses a part of it

pub mod processes;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Flags that make the baseline take a fraction of a second.
pub const QUICK_BASELINE: [&str; 12] = [
    "--baseline-round-trips",
    "500",
    "--baseline-tcp-mib",
    "32",
    "--baseline-fsyncs",
    "10",
    "--baseline-page-cache-mib",
    "16",
    "--baseline-tcp-store-mib",
    "16",
    "--baseline-tcp-store-pause-ms",
    "0",
];

/// Runs `booblik-load <args> --json <dir>/report.json` and returns the parsed report; panics
/// with the binary's output if it fails.
pub fn run_report(dir: &Path, args: &[&str]) -> Value {
    let json = dir.join("report.json");
    let output = Command::new(env!("CARGO_BIN_EXE_booblik-load"))
        .args(args)
        .args(QUICK_BASELINE)
        .arg("--data-dir")
        .arg(dir)
        .arg("--json")
        .arg(&json)
        .output()
        .expect("booblik-load runs");
    assert!(
        output.status.success(),
        "booblik-load {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(&json).expect("the JSON report was written");
    serde_json::from_str(&text).expect("the report is JSON")
}

/// The baseline keys every report carries, each a positive number.
pub fn assert_baseline(report: &Value) {
    for key in [
        "rtt_us_p50",
        "tcp_mb_s",
        "fsync_us_p50",
        "page_cache_write_mb_s",
        "tcp_store_mb_s",
        "tcp_store_after_pause_mb_s",
    ] {
        let value = report["baseline"][key]
            .as_f64()
            .unwrap_or_else(|| panic!("baseline.{key} is a number"));
        assert!(value > 0.0, "baseline.{key} = {value}");
    }
}

/// A run's number field, or a panic naming the missing key.
pub fn number(run: &Value, key: &str) -> f64 {
    run[key]
        .as_f64()
        .unwrap_or_else(|| panic!("run.{key} is a number in {run}"))
}

/// A run's integer field, or a panic naming the missing key.
pub fn integer(run: &Value, key: &str) -> u64 {
    run[key]
        .as_u64()
        .unwrap_or_else(|| panic!("run.{key} is a non-negative integer in {run}"))
}

/// `queue` with 3 workers picking at random from a backlog of `tasks`, one repetition and no
/// extra runs: the flags the short queue tests share (each adds its peers, work and limits).
pub fn backlog_queue(tasks: &str) -> Vec<&str> {
    vec![
        "queue",
        "--workers",
        "3",
        "--pick",
        "random",
        "--arrival",
        "backlog",
        "--tasks",
        tasks,
        "--repetitions",
        "1",
        "--no-extra-queue-runs",
    ]
}

/// Tasks in a stall chaos run.
pub const STALL_TASKS: u64 = 60;

/// Runs the stall chaos beside JetStream's own work queue (`queue --peers jetstream-workqueue
/// --chaos stall`: 3 workers, a backlog of [`STALL_TASKS`] tasks of 20 ms, one repetition), with
/// `engine` flags choosing what runs the claims protocol; returns the report's runs after checking,
/// for each system named in `systems`, that a worker was frozen and every task still completed.
pub fn run_stall_chaos(dir: &Path, engine: &[&str], systems: &[&str]) -> Vec<Value> {
    let tasks = STALL_TASKS.to_string();
    let mut args = backlog_queue(&tasks);
    args.extend_from_slice(engine);
    args.extend_from_slice(&[
        "--peers",
        "jetstream-workqueue",
        "--work-ms",
        "20",
        "--chaos",
        "stall",
        "--max-run-s",
        "60",
        "--pool",
        "1",
    ]);
    let report = run_report(dir, &args);
    let runs = report["runs"].as_array().expect("runs is an array").clone();
    for name in systems {
        let run = system(&runs, name);
        assert_eq!(run["chaos"], "stall", "{name}");
        assert_eq!(integer(run, "tasks_completed"), STALL_TASKS, "{name}");
        assert_eq!(integer(run, "tasks_never_completed"), 0, "{name}");
        assert!(
            integer(run, "workers_stalled") > 0,
            "{name}: a worker was frozen"
        );
    }
    runs
}

/// The run of `name` among `runs`, or a panic listing them.
pub fn system<'a>(runs: &'a [Value], name: &str) -> &'a Value {
    runs.iter()
        .find(|run| run["system"] == name)
        .unwrap_or_else(|| panic!("no {name} run in {runs:?}"))
}
