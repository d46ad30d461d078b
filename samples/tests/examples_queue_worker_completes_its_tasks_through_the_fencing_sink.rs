//! `cargo run --example queue_worker`, no arguments: on an embedded broker it submits 3 tasks and
//! claims, works and completes each — won under a token, effect committed to the fencing sink,
//! done accepted — and exits 0 within 30 s.

#[allow(dead_code)] // its `main` is the binary's, not the test's
#[path = "../examples/queue_worker.rs"]
mod example;
mod examples_support;

use booblik_samples::support::example::ExampleArgs;
use clap::Parser;

const THIS_TEST: &str = "the_queue_worker_example_completes_its_tasks_through_the_fencing_sink";

#[test]
fn the_queue_worker_example_completes_its_tasks_through_the_fencing_sink() {
    if let Some(args) = examples_support::child_args() {
        examples_support::run_child(example::run(ExampleArgs::parse_from(args)));
    }
    let (status, out) = examples_support::run_example(THIS_TEST, &[]);
    assert!(status.success(), "exit {status}:\n{out}");
    let done: Vec<&str> = out
        .lines()
        .filter(|l| l.contains(": won with token ") && l.contains("effect committed, DoneAccepted"))
        .collect();
    assert_eq!(done.len(), 3, "{out}");
    assert!(
        out.contains("3 tasks completed; 0 effects refused"),
        "{out}"
    );
}
