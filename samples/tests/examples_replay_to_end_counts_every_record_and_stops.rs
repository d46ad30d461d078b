//! `cargo run --example replay_to_end`, no arguments: on an embedded broker holding 50 events it
//! replays every partition to its high watermark, prints what each held, and stops — exit 0
//! within 30 s.

#[allow(dead_code)] // its `main` is the binary's, not the test's
#[path = "../examples/replay_to_end.rs"]
mod example;
mod examples_support;

use booblik_samples::support::example::ExampleArgs;
use clap::Parser;

const THIS_TEST: &str = "the_replay_to_end_example_counts_every_record_and_stops";

#[test]
fn the_replay_to_end_example_counts_every_record_and_stops() {
    if let Some(args) = examples_support::child_args() {
        examples_support::run_child(example::run(ExampleArgs::parse_from(args)));
    }
    let (status, out) = examples_support::run_example(THIS_TEST, &[]);
    assert!(status.success(), "exit {status}:\n{out}");
    let mut total = 0;
    for partition in 0..3 {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("partition {partition}: ")))
            .unwrap_or_else(|| panic!("no line for partition {partition}:\n{out}"));
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (records, end): (u64, u64) = (
            fields[2].parse().unwrap(),
            fields[7].trim_end_matches(',').parse().unwrap(),
        );
        assert_eq!(
            records, end,
            "a fresh log: as many records as the end offset: {line}"
        );
        total += records;
    }
    assert_eq!(total, 50, "{out}");
    assert!(out.contains("replayed 50 records to the end"), "{out}");
}
