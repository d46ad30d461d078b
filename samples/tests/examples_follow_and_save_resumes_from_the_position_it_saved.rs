//! `cargo run --example follow_and_save`, no arguments: the first run follows 20 events from the
//! earliest offset and saves position 20 after handling them; the second run starts at the saved
//! position, handles only the 5 events published since, and saves 25 — exit 0 within 30 s.

#[allow(dead_code)] // its `main` is the binary's, not the test's
#[path = "../examples/follow_and_save.rs"]
mod example;
mod examples_support;

use booblik_samples::support::example::ExampleArgs;
use clap::Parser;

const THIS_TEST: &str = "the_follow_and_save_example_resumes_from_the_position_it_saved";

#[test]
fn the_follow_and_save_example_resumes_from_the_position_it_saved() {
    if let Some(args) = examples_support::child_args() {
        examples_support::run_child(example::run(ExampleArgs::parse_from(args)));
    }
    let (status, out) = examples_support::run_example(THIS_TEST, &[]);
    assert!(status.success(), "exit {status}:\n{out}");
    let lines: Vec<&str> = out.lines().collect();
    let at = |prefix: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} in:\n{out}"))
    };
    let (first, first_saved) = (
        at("run 1: starting at Earliest (saved: None)"),
        at("run 1: saved position 20"),
    );
    let (second, second_saved) = (
        at("run 2: starting at At(20) (saved: Some(20))"),
        at("run 2: saved position 25"),
    );
    let handled = |from: usize, to: usize| -> Vec<i64> {
        lines[from + 1..to]
            .iter()
            .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
            .collect()
    };
    assert_eq!(
        handled(first, first_saved),
        (0..20).collect::<Vec<_>>(),
        "{out}"
    );
    assert_eq!(
        handled(second, second_saved),
        (20..25).collect::<Vec<_>>(),
        "nothing handled twice:\n{out}"
    );
}
