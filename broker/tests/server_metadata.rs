//! METADATA lists topics by name and partitions by id; any unknown topic fails the request.

mod support;

use booblik_protocol::ErrorCode;
use support::TestBroker;

#[tokio::test]
async fn metadata_is_sorted_by_topic_and_partition() {
    let broker = TestBroker::start_with(|c| {
        c.topics = booblik_broker::parse_topics("zeta:2,alpha:3,mid:1").unwrap();
    })
    .await;
    let mut conn = broker.connect().await;
    conn.produce("alpha", 2, &[b"a", b"b"]).await;
    let meta = conn.metadata(&[]).await.metadata();
    let shape: Vec<(String, Vec<i32>)> = meta
        .topics
        .iter()
        .map(|t| {
            (
                t.name.to_string(),
                t.partitions.iter().map(|p| p.id).collect(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        vec![
            ("alpha".to_string(), vec![0, 1, 2]),
            ("mid".to_string(), vec![0]),
            ("zeta".to_string(), vec![0, 1]),
        ]
    );
    assert_eq!(meta.topics[0].partitions[2].high_watermark, 2);
    assert_eq!(meta.topics[0].partitions[2].log_start_offset, 0);
    // Asking by name, in any order, still answers sorted.
    let some = conn.metadata(&["zeta", "alpha"]).await.metadata();
    let names: Vec<&str> = some.topics.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["alpha", "zeta"]);
}

#[tokio::test]
async fn naming_an_unknown_topic_fails_the_whole_metadata_request() {
    let broker = TestBroker::start().await;
    let mut conn = broker.connect().await;
    let response = conn.metadata(&["events", "nope"]).await;
    assert_eq!(
        response.header.error_code,
        ErrorCode::UnknownTopicOrPartition
    );
    assert!(response.body.is_empty());
}
