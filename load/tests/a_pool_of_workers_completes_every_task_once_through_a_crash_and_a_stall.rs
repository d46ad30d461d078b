//! Workers sharing one pair of followers (`queue --pool 3`: one `WorkerPool` of 3 members, each
//! on its own thread) keep the queue's promises when a member dies or freezes mid-task:
//!
//! * chaos `crash`: a member is killed, a replacement joins the pool, and every task is
//!   completed once — the pool's followers go on without the dead member;
//! * chaos `stall`: a member's thread blocks for 1.5 × its lease, another member takes the task
//!   over and fences the sink, so the frozen member's late effect is refused (refused effects
//!   above 0, duplicate effects 0). The followers run on the pool's own thread, so the freeze
//!   stops neither them nor the siblings.
//!
//! The crash runs once with each member on a connection of its own and once with every member
//! appending through the pool's connection (`--pool-connection shared`). Every run reports
//! `pool = 3` and passes the verifier over both logs.

mod support;

use std::path::Path;

use serde_json::Value;
use support::{backlog_queue, integer, run_report};

const TASKS: u64 = 60;

fn pooled_run(dir: &Path, chaos: &str, connection: &str) -> Value {
    let tasks = TASKS.to_string();
    let mut args = backlog_queue(&tasks);
    args.extend_from_slice(&[
        "--pool",
        "3",
        "--pool-connection",
        connection,
        "--work-ms",
        "20",
        "--chaos",
        chaos,
        "--max-run-s",
        "60",
    ]);
    let report = run_report(dir, &args);
    let runs = report["runs"].as_array().expect("runs is an array");
    assert_eq!(runs.len(), 1, "one run: {runs:?}");
    let run = runs[0].clone();
    assert_eq!(run["system"], "booblik");
    assert_eq!(run["chaos"], chaos);
    assert_eq!(
        integer(&run, "pool"),
        3,
        "the run's workers shared one pool"
    );
    assert_eq!(integer(&run, "tasks_completed"), TASKS);
    assert_eq!(integer(&run, "tasks_never_completed"), 0);
    assert_eq!(integer(&run, "duplicate_effects"), 0);
    assert_eq!(integer(&run, "duplicate_dones"), 0);
    assert_eq!(integer(&run, "violations"), 0);
    run
}

#[test]
fn a_pool_of_workers_completes_every_task_once_through_a_crash_and_a_stall() {
    let dir = tempfile::tempdir().unwrap();

    for connection in ["own", "shared"] {
        killed_members_are_replaced(&pooled_run(dir.path(), "crash", connection));
    }

    let stall = pooled_run(dir.path(), "stall", "own");
    assert!(
        integer(&stall, "workers_stalled") > 0,
        "a member was frozen"
    );
    assert!(
        integer(&stall, "refused_effects") > 0,
        "the frozen member's late effect was refused by the fenced sink"
    );
}

fn killed_members_are_replaced(crash: &Value) {
    assert!(integer(crash, "workers_killed") > 0, "a member was killed");
    assert!(
        integer(crash, "workers_replaced") > 0,
        "a replacement joined the pool"
    );
    assert!(
        integer(crash, "expired_leases") > 0,
        "the dead member's task was taken over after its lease"
    );
}
