//! `cargo run --example projection_snapshot`, no arguments: the first run folds 100 events and
//! saves model and positions in one file; the second restores exactly those positions, folds the
//! 100 published since, and ends at 200 events — exit 0 within 30 s.

#[allow(dead_code)] // its `main` is the binary's, not the test's
#[path = "../examples/projection_snapshot.rs"]
mod example;
mod examples_support;

use clap::Parser;

const THIS_TEST: &str = "the_projection_snapshot_example_restores_what_it_saved";

#[test]
fn the_projection_snapshot_example_restores_what_it_saved() {
    if let Some(args) = examples_support::child_args() {
        examples_support::run_child(example::run(example::Args::parse_from(args)));
    }
    let (status, out) = examples_support::run_example(THIS_TEST, &[]);
    assert!(status.success(), "exit {status}:\n{out}");
    let after = |prefix: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} in:\n{out}"))
    };
    assert_eq!(
        after("run 1: restored positions "),
        "{}",
        "nothing saved yet"
    );
    let saved = after("run 1: 100 events at ");
    assert_eq!(
        after("run 2: restored positions "),
        saved,
        "run 2 starts where run 1 saved"
    );
    assert!(out.contains("run 2: 200 events at "), "{out}");
}
