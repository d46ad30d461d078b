//! `cargo run --example keyed_publisher`, no arguments: on an embedded broker it sends 5 events
//! for each of 4 users keyed by user id, reads the partitions back, and shows every user's events
//! in one partition, in the order sent; it exits 0 within 30 s.

#[allow(dead_code)] // its `main` is the binary's, not the test's
#[path = "../examples/keyed_publisher.rs"]
mod example;
mod examples_support;

use booblik_samples::support::example::ExampleArgs;
use clap::Parser;

const THIS_TEST: &str = "the_keyed_publisher_example_shows_each_user_in_one_partition_in_order";

#[test]
fn the_keyed_publisher_example_shows_each_user_in_one_partition_in_order() {
    if let Some(args) = examples_support::child_args() {
        examples_support::run_child(example::run(ExampleArgs::parse_from(args)));
    }
    let (status, out) = examples_support::run_example(THIS_TEST, &[]);
    assert!(status.success(), "exit {status}:\n{out}");
    let users: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("partition ") && l.ends_with("seq [0, 1, 2, 3, 4] in order"))
        .collect();
    assert_eq!(
        users.len(),
        4,
        "each of the 4 users once, all 5 events in order:\n{out}"
    );
    for user in 0..4 {
        let user = format!("user-{user:03}");
        let lines = users.iter().filter(|l| l.contains(&user)).count();
        assert_eq!(lines, 1, "{user} in exactly one partition:\n{out}");
    }
    assert!(
        out.contains("20 events of 4 users: each user in one partition"),
        "{out}"
    );
}
