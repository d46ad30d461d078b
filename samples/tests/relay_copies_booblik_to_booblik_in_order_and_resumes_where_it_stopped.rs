//! The plain path: the relay binary copies a topic from one booblik broker to another, partition
//! p to partition p, every record once and in order; run again, it starts at the position it
//! saved and relays nothing more. Both brokers are embedded in this test.

mod relay_support;

use relay_support::{
    PARTITIONS, booblik, check_partition, produce, relay_args, run_again_relays_nothing,
    run_to_end, start_broker,
};

const RECORDS: u64 = 1_500;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_copies_every_record_once_in_order_and_resumes_where_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let source = start_broker(&dir.path().join("a"), "events:2").await;
    let target = start_broker(&dir.path().join("b"), "mirror:2").await;
    let (source_engine, target_engine) = (booblik(&source).await, booblik(&target).await);
    produce(&source_engine, "events", RECORDS, 250).await;

    let args = relay_args(
        dir.path(),
        &format!("booblik://{}/events", source.local_addr()),
        &format!("booblik://{}/mirror", target.local_addr()),
        &["--batch-max-records", "200"],
    );
    let (first, _) = run_to_end(dir.path(), 0, &args).await;
    assert_eq!(first.relayed, RECORDS * PARTITIONS as u64, "{first:?}");
    assert_eq!(first.duplicates, 0, "{first:?}");
    for p in 0..PARTITIONS {
        let log = booblik_samples::engine::LogEngine::open(&target_engine, "mirror", p)
            .await
            .unwrap();
        let landed = check_partition(log.as_ref(), p, RECORDS).await;
        assert_eq!(landed.records, RECORDS, "partition {p}: {landed:?}");
        assert_eq!(first.partitions[p as usize].position, RECORDS as i64);
    }

    run_again_relays_nothing(dir.path(), &args, &[RECORDS as i64; PARTITIONS as usize]).await;
}
