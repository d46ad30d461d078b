//! A queue run stopped by SIGTERM (or Ctrl-C) does not die with its servers still running: the
//! harness drops the workload, which kills the child broker and removes its temporary data
//! directory, and exits with an error that says why.

mod support;

use std::process::{Command, Stdio};

use support::processes::{children_running, entries_named, is_running, terminate, wait_for};
use support::{QUICK_BASELINE, backlog_queue};

#[test]
fn a_harness_stopped_by_sigterm_leaves_no_broker_and_no_data_behind() {
    let dir = tempfile::tempdir().unwrap();
    // Far more work than the test waits for: the run is stopped in the middle.
    let mut harness = Command::new(env!("CARGO_BIN_EXE_booblik-load"))
        .args(backlog_queue("100000"))
        .args(["--work-ms", "5", "--pool", "1", "--max-run-s", "120"])
        .args(QUICK_BASELINE)
        .arg("--data-dir")
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("booblik-load starts");
    let broker = wait_for("the child broker", || {
        children_running(harness.id(), "serve-child")
            .first()
            .copied()
    });
    assert!(
        !entries_named(dir.path(), "booblik-load-").is_empty(),
        "the broker's data directory exists while it runs"
    );

    let (succeeded, stderr) = terminate(&mut harness);

    assert!(!succeeded, "a stopped run is not a success");
    assert!(
        stderr.contains("stopped by SIGTERM"),
        "the harness says why it stopped: {stderr}"
    );
    wait_for("the child broker to be gone", || {
        (!is_running(broker)).then_some(())
    });
    assert_eq!(
        entries_named(dir.path(), "booblik-load-"),
        Vec::<String>::new(),
        "the broker's temporary data directory was removed"
    );
}
