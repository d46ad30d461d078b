//! The storage serves the fixed set of topics it was opened with: each partition has its own
//! directory and offsets, topics are listed by name and partitions by id.

mod storage_support;

use booblik_broker::storage::{Storage, StorageError, WriteMode};
use booblik_protocol::{AckPolicy, TopicName};
use storage_support::{config, records};

#[tokio::test]
async fn topics_come_sorted_by_name_with_partitions_by_id_each_with_independent_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let topics = [
        (TopicName::new("orders").unwrap(), 3),
        (TopicName::new("claims").unwrap(), 1),
    ];
    let storage = Storage::open(config(dir.path(), WriteMode::Mapped, 1 << 20), &topics).unwrap();
    let listed: Vec<(String, Vec<i32>)> = storage
        .topics()
        .map(|(name, partitions)| {
            (
                name.to_string(),
                partitions.iter().map(|p| p.id()).collect(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("claims".to_owned(), vec![0]),
            ("orders".to_owned(), vec![0, 1, 2])
        ]
    );
    for (name, partitions) in storage.topics() {
        for partition in partitions {
            assert_eq!(partition.topic(), name);
            let appended = partition
                .append(records(&[b"a", b"b"]), AckPolicy::Written)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(appended.base_offset, 0, "partitions do not share offsets");
            assert!(
                dir.path()
                    .join(format!("{name}-{}", partition.id()))
                    .is_dir()
            );
        }
    }
    assert!(storage.partition("orders", 3).is_none());
    assert!(storage.partition("orders", -1).is_none());
    assert!(storage.partition("unknown", 0).is_none());
    assert_eq!(storage.partition("orders", 2).unwrap().high_watermark(), 2);
    storage.close().unwrap();
}

#[test]
fn a_topic_listed_twice_or_with_no_partitions_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let name = TopicName::new("t").unwrap();
    let config = config(dir.path(), WriteMode::File, 1 << 20);
    assert!(matches!(
        Storage::open(config.clone(), &[(name.clone(), 1), (name.clone(), 2)]),
        Err(StorageError::InvalidConfig { .. })
    ));
    assert!(matches!(
        Storage::open(config, &[(name, 0)]),
        Err(StorageError::InvalidConfig { .. })
    ));
}
