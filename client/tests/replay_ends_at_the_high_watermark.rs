//! `replay()` reads up to the high watermark seen when it started and then ends, even while
//! new records keep arriving.

mod support;

use booblik_client::{Client, ConsumerConfig, StartPosition};
use futures::StreamExt;
use support::{FakeBroker, test_config, within};

/// Two 2-byte records (10 bytes each) and part of a third per fetch.
const MAX_BYTES: i32 = 25;

fn payloads(range: std::ops::Range<usize>) -> Vec<Vec<u8>> {
    range.map(|i| format!("r{i}").into_bytes()).collect()
}

fn refs(payloads: &[Vec<u8>]) -> Vec<&[u8]> {
    payloads.iter().map(Vec::as_slice).collect()
}

#[tokio::test]
async fn a_replay_stops_at_the_watermark_it_started_with() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    broker.append("t", 0, &refs(&payloads(0..5)));
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    let config = ConsumerConfig {
        max_bytes: MAX_BYTES,
        ..ConsumerConfig::default()
    };
    let consumer = client
        .consumer("t", 0, StartPosition::Earliest, config)
        .await
        .unwrap();
    let mut replay = consumer.replay().await.unwrap();
    assert_eq!(replay.end_offset(), 5);
    broker.append("t", 0, &refs(&payloads(5..8))); // after the start: not part of the replay

    let mut seen = Vec::new();
    while let Some(batch) = within("a replay batch", replay.next_batch()).await.unwrap() {
        assert!(!batch.is_empty());
        for record in &batch.records {
            seen.push((record.offset, record.payload.to_vec()));
        }
    }

    let expected: Vec<(i64, Vec<u8>)> = (0..5).zip(payloads(0..5)).collect();
    assert_eq!(seen, expected);
    assert_eq!(replay.position(), 5);
    assert!(
        replay.next_batch().await.unwrap().is_none(),
        "a finished replay stays finished"
    );
}

#[tokio::test]
async fn a_replay_stream_ends_after_the_last_batch() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    broker.append("t", 0, &refs(&payloads(0..5)));
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    let config = ConsumerConfig {
        max_bytes: MAX_BYTES,
        ..ConsumerConfig::default()
    };
    let consumer = client
        .consumer("t", 0, StartPosition::At(2), config)
        .await
        .unwrap();
    let batches: Vec<_> = within(
        "the replay stream",
        consumer
            .replay()
            .await
            .unwrap()
            .into_stream()
            .collect::<Vec<_>>(),
    )
    .await;
    let offsets: Vec<i64> = batches
        .into_iter()
        .flat_map(|b| b.unwrap().records)
        .map(|r| r.offset)
        .collect();
    assert_eq!(offsets, vec![2, 3, 4]);
}
