//! A tiny produce run through the binary: the report names the configuration and gives a
//! positive throughput for records the harness found in the log.

mod support;

use support::{assert_baseline, integer, number, run_report};

#[test]
fn a_tiny_produce_run_reports_records_found_in_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let report = run_report(
        dir.path(),
        &[
            "produce",
            "--sizes",
            "100",
            "--acks",
            "written",
            "--producers",
            "1",
            "--produce-clients",
            "producer",
            "--produce-duration-ms",
            "200",
        ],
    );
    assert_baseline(&report);
    let runs = report["runs"].as_array().expect("runs is an array");
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run["kind"], "produce");
    assert_eq!(run["ack"], "written");
    assert_eq!(integer(run, "record_bytes"), 100);
    assert!(integer(run, "records") > 0);
    assert!(number(run, "records_per_s") > 0.0);
    let expected_mb_s = number(run, "records_per_s") * 100.0 / 1e6;
    assert!((number(run, "mb_s") - expected_mb_s).abs() < 1e-6 * expected_mb_s.max(1.0));
    assert!(number(&run["vs_baseline"], "wire_mb_s_over_tcp_mb_s") > 0.0);
}
