//! A short soak through the binary — producers, restarting followers, a replayer and one
//! graceful broker restart — exits 0 with zero violations and every acknowledged record read.

mod support;

use support::{integer, run_report};

#[test]
fn a_short_soak_with_broker_restarts_finds_no_violation() {
    let dir = tempfile::tempdir().unwrap();
    let report = run_report(
        dir.path(),
        &[
            "soak",
            "--duration-s",
            "3",
            "--rate-per-producer",
            "300",
            "--broker-restarts",
            "1",
            "--restart-min-ms",
            "100",
            "--restart-max-ms",
            "600",
        ],
    );
    let run = &report["runs"][0];
    assert_eq!(run["kind"], "soak");
    assert_eq!(integer(run, "violations"), 0);
    assert_eq!(integer(run, "broker_restarts"), 1);
    assert!(integer(run, "records_acked") > 0);
    assert!(integer(run, "records_in_log") >= integer(run, "records_acked"));
    // Two followers per partition, each read its whole partition at least once.
    assert!(integer(run, "follower_records_read") >= 2 * integer(run, "records_in_log"));
}
