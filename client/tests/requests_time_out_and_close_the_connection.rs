//! A request with no answer within `request_timeout_ms` fails with `Timeout`, and the
//! connection closes: answers come in order, so everything behind the missing answer would wait
//! too. Requests pending behind it fail with the reason, later calls fail fast.

mod support;

use booblik_client::{ClientError, Connection, ConnectionConfig};
use booblik_protocol::{FetchRequest, LongPoll, MAX_FETCH_WAIT_MS, TopicName};
use support::{FakeBroker, within};

const REQUEST_TIMEOUT_MS: u64 = 300;

/// A connection with [`REQUEST_TIMEOUT_MS`] to a broker that reads requests and answers none
/// (kept alive by the caller).
async fn connection_to_a_broker_that_never_answers() -> (FakeBroker, Connection) {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    broker.never_answer();
    let config = ConnectionConfig {
        request_timeout_ms: REQUEST_TIMEOUT_MS,
        ..ConnectionConfig::default()
    };
    let connection = Connection::connect(&broker.addr(), config).await.unwrap();
    (broker, connection)
}

#[tokio::test]
async fn an_unanswered_request_times_out_and_fails_the_requests_behind_it() {
    let (_broker, connection) = connection_to_a_broker_that_never_answers().await;
    let topics = [TopicName::new("t").unwrap()];

    let first = connection.submit_metadata(&topics).await.unwrap();
    let second = connection.submit_metadata(&topics).await.unwrap();
    let first = within("the first request", first.wait()).await;
    match first {
        Err(ClientError::Timeout {
            api, timeout_ms, ..
        }) => {
            assert_eq!(api, "metadata");
            assert_eq!(timeout_ms, REQUEST_TIMEOUT_MS);
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    let second = within("the second request", second.wait()).await;
    match second {
        Err(ClientError::ConnectionClosed { reason }) => {
            assert!(reason.contains("no answer within 300 ms"), "{reason}");
        }
        other => panic!("expected ConnectionClosed, got {other:?}"),
    }
    assert!(connection.is_closed());
    assert!(matches!(
        connection.metadata(&topics).await,
        Err(ClientError::ConnectionClosed { .. })
    ));
}

/// With paused time the runtime jumps to the next timer whenever it is idle, so the test does
/// not wait the minute: it reads the limit the request actually got.
#[tokio::test(start_paused = true)]
async fn a_long_poll_gets_no_more_than_the_brokers_clamp_on_top_of_the_request_timeout() {
    let (_broker, connection) = connection_to_a_broker_that_never_answers().await;
    let request = FetchRequest {
        topic: TopicName::new("t").unwrap(),
        partition: 0,
        fetch_offset: 0,
        max_bytes: 1024,
        // 24.8 days; a broker waits at most a minute.
        long_poll: Some(LongPoll {
            max_wait_ms: i32::MAX,
            min_bytes: 1,
        }),
    };
    match connection.fetch(request).await {
        Err(ClientError::Timeout {
            api, timeout_ms, ..
        }) => {
            assert_eq!(api, "fetch");
            assert_eq!(timeout_ms, REQUEST_TIMEOUT_MS + MAX_FETCH_WAIT_MS as u64);
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
}

#[tokio::test]
async fn a_broker_that_does_not_listen_fails_the_connect_with_a_clear_error() {
    // Bind and drop a listener to get a port nobody listens on.
    let addr = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().to_string()
    };
    let error = Connection::connect(&addr, ConnectionConfig::default())
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Connect { .. }), "{error:?}");
    assert!(error.to_string().contains(&addr), "{error}");
}
