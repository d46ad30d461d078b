//! An answer whose correlationId is not the oldest pending request's is a broken broker, not
//! something to reorder around: every pending request fails loudly, naming both ids, and the
//! connection is closed for later calls.

mod support;

use booblik_client::{ClientError, Connection};
use booblik_protocol::TopicName;
use support::{FakeBroker, test_config, within};

const PENDING: usize = 5;
const SHIFT: i32 = 1000;

#[tokio::test]
async fn a_mismatched_answer_fails_all_pending_requests_naming_both_ids() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    broker.gather_requests(PENDING); // all five are pending when the first answer goes out
    broker.shift_next_correlation_id(SHIFT);
    let connection = Connection::connect(&broker.addr(), test_config())
        .await
        .unwrap();
    let topics = [TopicName::new("t").unwrap()];

    let mut answers = Vec::new();
    for _ in 0..PENDING {
        answers.push(connection.submit_metadata(&topics).await.unwrap());
    }
    let first_id = answers[0].correlation_id();
    let results = within(
        "pending requests",
        futures::future::join_all(
            answers
                .into_iter()
                .map(booblik_client::ResponseFuture::wait),
        ),
    )
    .await;

    for result in results {
        match result {
            Err(ClientError::CorrelationMismatch { expected, received }) => {
                assert_eq!(expected, first_id);
                assert_eq!(received, first_id + SHIFT);
            }
            other => panic!("expected a correlation mismatch, got {other:?}"),
        }
    }
    let later = connection.metadata(&topics).await.unwrap_err();
    match &later {
        ClientError::ConnectionClosed { reason } => {
            assert!(reason.contains(&first_id.to_string()), "{reason}");
            assert!(reason.contains(&(first_id + SHIFT).to_string()), "{reason}");
        }
        other => panic!("later calls must fail fast as closed, got {other:?}"),
    }
}
