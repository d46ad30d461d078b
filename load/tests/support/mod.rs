//! Running the `booblik-load` binary with a quick baseline and reading its JSON report.

#![allow(dead_code)] // each test file uses a part of it

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Flags that make the baseline take a fraction of a second.
pub const QUICK_BASELINE: [&str; 6] = [
    "--baseline-round-trips",
    "500",
    "--baseline-tcp-mib",
    "32",
    "--baseline-fsyncs",
    "10",
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
    for key in ["rtt_us_p50", "tcp_mb_s", "fsync_us_p50"] {
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
