//! A queue run stopped by SIGTERM (or Ctrl-C) does not die with its servers still running: the
//! harness drops the workload, which kills the child broker and removes its temporary data
//! directory, and exits with an error that says why.

mod support;

use support::processes::{
    children_running, entries_named, is_running, start_long_queue_run,
    terminate_and_expect_the_reason, wait_for,
};

#[test]
fn a_harness_stopped_by_sigterm_leaves_no_broker_and_no_data_behind() {
    let dir = tempfile::tempdir().unwrap();
    // Far more work than the test waits for: the run is stopped in the middle.
    let mut harness = start_long_queue_run(dir.path(), &[]);
    let broker = wait_for("the child broker", || {
        children_running(harness.id(), "serve-child")
            .first()
            .copied()
    });
    assert!(
        !entries_named(dir.path(), "booblik-load-").is_empty(),
        "the broker's data directory exists while it runs"
    );

    terminate_and_expect_the_reason(&mut harness);
    wait_for("the child broker to be gone", || {
        (!is_running(broker)).then_some(())
    });
    assert_eq!(
        entries_named(dir.path(), "booblik-load-"),
        Vec::<String>::new(),
        "the broker's temporary data directory was removed"
    );
}
