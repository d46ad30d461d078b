//! `cargo run --example keyed_publisher -- --broker ADDR` against a broker whose `events` topic
//! already holds records that are not events (the README's `echo hello | booblik produce events`
//! leaves one): the example reads past them and shows its own events in order, instead of
//! stopping at the first record it cannot decode.

#[allow(dead_code)] // its `main` is the binary's, not the test's
#[path = "../examples/keyed_publisher.rs"]
mod example;
mod examples_support;

use booblik_client::{Client, ConnectionConfig, ProducerConfig};
use booblik_samples::support::embedded_broker;
use booblik_samples::support::example::ExampleArgs;
use clap::Parser;

const THIS_TEST: &str = "the_keyed_publisher_example_skips_records_that_are_not_events";

#[test]
fn the_keyed_publisher_example_skips_records_that_are_not_events() {
    if let Some(args) = examples_support::child_args() {
        examples_support::run_child(example::run(ExampleArgs::parse_from(args)));
    }
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let broker = runtime
        .block_on(embedded_broker::start(
            dir.path(),
            "127.0.0.1:0".parse().unwrap(),
            embedded_broker::DEMO_TOPICS,
        ))
        .expect("an embedded broker");
    let addr = broker.local_addr().to_string();
    // What another program could have written: plain text at the start of every partition,
    // before the example's own events.
    runtime.block_on(async {
        let client = Client::connect(&addr, ConnectionConfig::default())
            .await
            .expect("a client");
        let producer = client
            .producer("events", ProducerConfig::default())
            .await
            .expect("a producer");
        for partition in 0..3 {
            let delivery = producer
                .send_to(partition, &b"hello"[..])
                .await
                .expect("queued");
            producer.flush().await.expect("flushed");
            delivery.await.expect("a foreign record appended");
        }
    });

    let (status, out) = examples_support::run_example(THIS_TEST, &["--broker", &addr]);
    assert!(status.success(), "exit {status}:\n{out}");
    let users = out
        .lines()
        .filter(|l| l.starts_with("partition ") && l.ends_with("seq [0, 1, 2, 3, 4] in order"))
        .count();
    assert_eq!(
        users, 4,
        "each of the 4 users, all 5 events in order:\n{out}"
    );
    runtime
        .block_on(broker.shutdown())
        .expect("the broker stops");
}
