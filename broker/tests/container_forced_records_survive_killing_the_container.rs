//! Durability through the image and a real volume: every record the broker acknowledged with
//! ack FORCED (fsync) is still there, byte for byte and at its offset, after the container is
//! SIGKILLed (no shutdown path runs) and started again on the same data volume; and the log
//! continues at the next offset.

mod container_support;

use booblik_client::{AckPolicy, ConsumerConfig, ProducerConfig, StartPosition};
use container_support::{
    STEP_WITHIN_MS, TestVolume, broker_request, connect_when_ready, kill, start, within,
};

/// Records acknowledged before the kill.
const RECORDS: usize = 400;
/// Records sent without waiting, so FORCED batches share fsyncs as they do under load.
const SEND_AHEAD: usize = 64;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Docker and the booblik image; run by .ci/extra"]
async fn forced_records_survive_a_container_kill_and_restart_on_the_same_volume() {
    let volume = TestVolume::unique("forced");
    let container = start(broker_request("events:1", Some(&volume.name))).await;
    let client = connect_when_ready(&container).await;
    let producer = client
        .producer(
            "events",
            ProducerConfig {
                ack: AckPolicy::Forced,
                ..ProducerConfig::default()
            },
        )
        .await
        .unwrap();

    let mut acknowledged: Vec<(i64, Vec<u8>)> = Vec::new();
    let mut pending = Vec::new();
    for n in 0..RECORDS {
        let payload = format!("forced record {n}").into_bytes();
        pending.push((producer.send_to(0, payload.clone()).await.unwrap(), payload));
        if pending.len() == SEND_AHEAD || n + 1 == RECORDS {
            producer.flush().await.unwrap();
            for (delivery, payload) in pending.drain(..) {
                let offset = within(STEP_WITHIN_MS, "a FORCED delivery", delivery)
                    .await
                    .unwrap()
                    .expect("ack FORCED answers with the offset");
                acknowledged.push((offset, payload));
            }
        }
    }
    drop(producer);
    drop(client);

    kill(&container).await;
    container.start().await.expect("the container starts again");
    let client = connect_when_ready(&container).await;

    let consumer = client
        .consumer(
            "events",
            0,
            StartPosition::Earliest,
            ConsumerConfig::default(),
        )
        .await
        .unwrap();
    let mut replay = consumer.replay().await.unwrap();
    let mut recovered: Vec<(i64, Vec<u8>)> = Vec::new();
    while let Some(batch) = within(STEP_WITHIN_MS, "a replay batch", replay.next_batch())
        .await
        .unwrap()
    {
        recovered.extend(batch.records.iter().map(|r| (r.offset, r.payload.to_vec())));
    }
    assert_eq!(
        recovered, acknowledged,
        "after SIGKILL and restart the log holds exactly the acknowledged records"
    );

    let producer = client
        .producer("events", ProducerConfig::default())
        .await
        .unwrap();
    let next = within(
        STEP_WITHIN_MS,
        "a delivery after the restart",
        producer.send_to(0, "after the restart").await.unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(
        next,
        Some(RECORDS as i64),
        "the log continues right after the last recovered record"
    );
}
