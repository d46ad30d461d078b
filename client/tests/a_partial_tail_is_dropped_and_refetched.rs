//! A FETCH answer may end in the middle of a record. The fragment is dropped, the position stops
//! before it, and the next FETCH asks for that record from its start: nothing is lost and no
//! fragment is ever handed out as a record.

mod support;

use booblik_client::{Client, ConsumerConfig, StartPosition};
use booblik_protocol::ApiKey;
use support::{FakeBroker, test_config, within};

fn hundred(byte: u8) -> Vec<u8> {
    vec![byte; 100]
}

async fn replay_all(broker: &FakeBroker, max_bytes: i32) -> Vec<(i64, Vec<u8>)> {
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    let config = ConsumerConfig {
        max_bytes,
        ..ConsumerConfig::default()
    };
    let consumer = client
        .consumer("t", 0, StartPosition::Earliest, config)
        .await
        .unwrap();
    let mut replay = consumer.replay().await.unwrap();
    let mut seen = Vec::new();
    while let Some(batch) = within("a replay batch", replay.next_batch()).await.unwrap() {
        seen.extend(
            batch
                .records
                .into_iter()
                .map(|r| (r.offset, r.payload.to_vec())),
        );
    }
    seen
}

#[tokio::test]
async fn a_tail_cut_by_max_bytes_is_dropped_and_read_whole_by_the_next_fetch() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    broker.append("t", 0, &[&hundred(b'A'), &hundred(b'B'), &hundred(b'C')]);

    // 108 bytes per record: 150 ends inside the second one every time.
    let seen = replay_all(&broker, 150).await;

    assert_eq!(
        seen,
        vec![(0, hundred(b'A')), (1, hundred(b'B')), (2, hundred(b'C'))]
    );
    let offsets: Vec<i64> = broker
        .seen_of(ApiKey::Fetch)
        .iter()
        .map(|s| s.fetch_offset.unwrap())
        .collect();
    assert_eq!(
        offsets,
        vec![0, 1, 2],
        "each cut record is asked for from its start"
    );
}

#[tokio::test]
async fn a_tail_cut_short_by_the_broker_is_dropped_too() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    broker.append("t", 0, &[&hundred(b'A'), &hundred(b'B')]);
    broker.cut_fetch_payloads_to(120); // one whole record and 12 bytes of the next

    let seen = replay_all(&broker, 1 << 20).await;

    assert_eq!(seen, vec![(0, hundred(b'A')), (1, hundred(b'B'))]);
}
