//! The partition-log contract every engine keeps, written once and run against each engine (no
//! branch per engine: only [`Bounds::origin`] differs, and the checks ask for it).

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use booblik_samples::engine::{Ack, EngineError, LogEngine, PartitionLog, ReadLimits};
use bytes::Bytes;

/// A quick read: no waiting.
pub fn now(max_records: usize) -> ReadLimits {
    ReadLimits {
        max_records,
        max_bytes: 1024 * 1024,
        wait: Duration::ZERO,
    }
}

/// A long poll of `ms`.
pub fn waiting(ms: u64) -> ReadLimits {
    ReadLimits {
        max_records: 100,
        max_bytes: 1024 * 1024,
        wait: Duration::from_millis(ms),
    }
}

fn records(prefix: &str, n: usize) -> Vec<Bytes> {
    (0..n)
        .map(|i| Bytes::from(format!("{prefix}-{i}")))
        .collect()
}

/// Runs every clause of the contract on `topic`'s partition 0, which must be empty.
pub async fn check_contract(engine: &dyn LogEngine, topic: &str) {
    assert_eq!(engine.partition_count(topic).await.unwrap(), 1);
    let log: Arc<dyn PartitionLog> = engine.open(topic, 0).await.unwrap();

    // A fresh partition: nothing held, its end is its origin.
    let bounds = log.bounds().await.unwrap();
    let origin = bounds.origin;
    assert_eq!(
        (bounds.start, bounds.end),
        (origin, origin),
        "a fresh partition is empty"
    );

    // One writer: consecutive offsets from the origin, at either ack level.
    let first = log.append(&records("a", 3), Ack::Forced).await.unwrap();
    assert_eq!(first.offsets, vec![origin, origin + 1, origin + 2]);
    let second = log.append(&records("b", 2), Ack::Written).await.unwrap();
    assert_eq!(second.offsets, vec![origin + 3, origin + 4]);
    let bounds = log.bounds().await.unwrap();
    assert_eq!((bounds.start, bounds.end), (origin, origin + 5));

    // Reads return what was written, in order, at its offsets; a limit splits a read, and the
    // next read goes on where it ended.
    let head = log.read(origin, now(2)).await.unwrap();
    assert_eq!(
        offsets_and_payloads(&head.records),
        vec![(origin, "a-0".into()), (origin + 1, "a-1".into())]
    );
    assert_eq!(head.next_offset, origin + 2);
    let rest = log.read(head.next_offset, now(100)).await.unwrap();
    assert_eq!(
        offsets_and_payloads(&rest.records),
        vec![
            (origin + 2, "a-2".into()),
            (origin + 3, "b-0".into()),
            (origin + 4, "b-1".into())
        ]
    );
    assert_eq!(rest.next_offset, origin + 5);

    // Going back is allowed: a reader owns its position.
    let again = log.read(origin + 1, now(1)).await.unwrap();
    assert_eq!(
        offsets_and_payloads(&again.records),
        vec![(origin + 1, "a-1".into())]
    );

    // At the end: nothing, after the wait, and the position stays.
    let caught_up = log.read(origin + 5, waiting(100)).await.unwrap();
    assert!(caught_up.records.is_empty());
    assert_eq!(caught_up.next_offset, origin + 5);

    // Past the end: out of range, naming the bounds.
    match log.read(origin + 6, now(1)).await {
        Err(EngineError::OutOfRange {
            offset, start, end, ..
        }) => {
            assert_eq!((offset, start, end), (origin + 6, origin, origin + 5));
        }
        other => panic!("a read past the end must be out of range, got {other:?}"),
    }

    // A long poll waiting at the end wakes for a record appended meanwhile.
    let reader = log.clone();
    let poll = tokio::spawn(async move { reader.read(origin + 5, waiting(5_000)).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    log.append(&records("c", 1), Ack::Forced).await.unwrap();
    let woke = tokio::time::timeout(Duration::from_secs(10), poll)
        .await
        .expect("the long poll must answer once a record arrives")
        .unwrap()
        .unwrap();
    assert_eq!(
        offsets_and_payloads(&woke.records),
        vec![(origin + 5, "c-0".into())]
    );

    // An empty record is refused, and nothing is written.
    let refused = log.append(&[Bytes::new()], Ack::Forced).await;
    assert!(
        matches!(refused, Err(EngineError::Refused { .. })),
        "{refused:?}"
    );
    assert_eq!(log.bounds().await.unwrap().end, origin + 6);

    // An unknown partition is unknown.
    assert!(matches!(
        engine.open(topic, 7).await,
        Err(EngineError::Unknown(_))
    ));
}

fn offsets_and_payloads(records: &[booblik_samples::engine::LogRecord]) -> Vec<(i64, String)> {
    records
        .iter()
        .map(|record| {
            (
                record.offset,
                String::from_utf8_lossy(&record.payload).into_owned(),
            )
        })
        .collect()
}
