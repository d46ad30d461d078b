//! booblik → Kafka: the relay binary copies a booblik topic into a Kafka topic, partition p to
//! partition p, every record once and in order, each carrying its source position in headers;
//! run again, it relays nothing more. Kafka is a `tansu` broker started here
//! (`booblik_samples::support::tansu` says how to install it; without it the test fails).
//!
//! `cargo test -p booblik-samples --features kafka --test relay_copies_booblik_to_kafka_in_order_and_resumes_where_it_stopped -- --ignored`

#![cfg(feature = "kafka")]

mod relay_support;

use relay_support::{
    PARTITIONS, booblik, check_payloads, kafka, produce, relay_args, run_again_relays_nothing,
    run_to_end, start_broker,
};

const RECORDS: u64 = 1_200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Kafka broker (tansu); run by .ci/run with --features kafka -- --ignored"]
async fn the_relay_copies_booblik_into_kafka_once_in_order_with_source_positions() {
    let dir = tempfile::tempdir().unwrap();
    let broker = kafka::start_with_topic(dir.path(), "mirror", PARTITIONS).await;
    let source = start_broker(&dir.path().join("a"), "events:2").await;
    produce(&booblik(&source).await, "events", RECORDS, 250).await;

    let args = relay_args(
        dir.path(),
        &format!("booblik://{}/events", source.local_addr()),
        &format!("kafka://{}/mirror", broker.addr()),
        &["--batch-max-records", "200"],
    );
    let (first, _) = run_to_end(dir.path(), 0, &args).await;
    assert_eq!(first.relayed, RECORDS * PARTITIONS as u64, "{first:?}");
    for p in 0..PARTITIONS {
        let read = kafka::read_all(broker.addr(), "mirror", p).await;
        let payloads: Vec<_> = read.iter().map(|r| r.payload.clone()).collect();
        let landed = check_payloads(&payloads, p, RECORDS);
        assert_eq!(landed.records, RECORDS, "partition {p}: {landed:?}");
        for (n, record) in read.iter().enumerate() {
            let header = |name: &str| {
                record
                    .headers
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
            };
            assert_eq!(header("Booblik-Relay-Source"), Some(format!("events/{p}")));
            assert_eq!(header("Booblik-Relay-Offset"), Some(n.to_string()));
        }
    }

    run_again_relays_nothing(dir.path(), &args, &[RECORDS as i64; PARTITIONS as usize]).await;
}
