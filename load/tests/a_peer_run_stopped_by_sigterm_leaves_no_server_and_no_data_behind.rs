//! A queue run with peers, stopped by SIGTERM while booblik's run is in progress, stops the
//! redis-server and PostgreSQL it started (by their pids) and removes their temporary data
//! directories, as it does the child broker's: a harness that is interrupted leaves no server
//! listening on 127.0.0.1 and nothing on disk.
//!
//! Needs the servers installed (Debian: `apt-get install redis-server postgresql`), hence
//! `#[ignore]`: `.ci/run` installs them and runs this with `--ignored`; locally
//! `cargo test -p booblik-load --test a_peer_run_stopped_by_sigterm_leaves_no_server_and_no_data_behind -- --ignored`.

mod support;

use support::processes::{
    children_running, entries_named, is_running, start_long_queue_run,
    terminate_and_expect_the_reason, wait_for,
};

#[test]
#[ignore = "needs redis-server and PostgreSQL installed; .ci/run installs them"]
fn a_peer_run_stopped_by_sigterm_leaves_no_server_and_no_data_behind() {
    let dir = tempfile::tempdir().unwrap();
    // Far more work than the test waits for: booblik's run, the first, is stopped in the middle,
    // with both peers' servers already started (the harness starts them before any run).
    let mut harness = start_long_queue_run(dir.path(), &["--peers", "redis-fsync,postgres"]);
    // Every server is a child of the harness: the broker, redis-server, and postgres (its own
    // helper processes are the postmaster's children and exit with it).
    let servers = wait_for("the broker and both peer servers", || {
        let found: Vec<u32> = ["serve-child", "redis-server", "postgres"]
            .iter()
            .filter_map(|name| children_running(harness.id(), name).first().copied())
            .collect();
        (found.len() == 3).then_some(found)
    });
    for prefix in ["booblik-load-redis-", "booblik-load-postgres-"] {
        assert_eq!(
            entries_named(dir.path(), prefix).len(),
            1,
            "{prefix}* exists while the server runs"
        );
    }

    terminate_and_expect_the_reason(&mut harness);
    for pid in servers {
        wait_for("every server the harness started to be gone", || {
            (!is_running(pid)).then_some(())
        });
    }
    assert_eq!(
        entries_named(dir.path(), "booblik-load-"),
        Vec::<String>::new(),
        "every temporary data directory (broker, redis, postgres) was removed"
    );
}
