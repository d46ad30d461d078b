//! When the broker goes away in the middle of an answer, every pending request fails with a
//! clear "connection closed" error, and later calls fail fast instead of hanging.

mod support;

use booblik_client::{ClientError, Connection};
use booblik_protocol::TopicName;
use support::{FakeBroker, test_config, within};

const PENDING: usize = 3;

#[tokio::test]
async fn a_socket_closed_mid_answer_fails_every_pending_request_and_later_calls() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    broker.gather_requests(PENDING);
    broker.close_mid_next_response();
    let connection = Connection::connect(&broker.addr(), test_config())
        .await
        .unwrap();
    let topics = [TopicName::new("t").unwrap()];

    let mut answers = Vec::new();
    for _ in 0..PENDING {
        answers.push(connection.submit_metadata(&topics).await.unwrap());
    }
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
            Err(ClientError::ConnectionClosed { reason }) => {
                assert!(reason.contains("closed the connection"), "{reason}");
            }
            other => panic!("expected ConnectionClosed, got {other:?}"),
        }
    }
    assert!(connection.is_closed());
    let later = within(
        "a call on a closed connection",
        connection.metadata(&topics),
    )
    .await;
    assert!(
        matches!(later, Err(ClientError::ConnectionClosed { .. })),
        "{later:?}"
    );
}
