//! A caller whose redial is slow (a connect can take up to `connect_timeout_ms`, 5 s by
//! default, when the broker is unreachable) holds up no other caller: `Redial` holds no lock
//! across a connect, so a second caller dials on its own and is answered at once, and the slow
//! caller, when its connect finally completes, shares the connection the second one installed.
//!
//! Time is paused: the slow dial is a 5 s `sleep` on the paused clock, and the second caller
//! is given 100 ms of it. Were the connect made under a lock (as `Client::connection` once
//! did, with a tokio `Mutex`), the second caller would wait for the lock, the clock would
//! auto-advance to its 100 ms deadline, and the test would fail.

mod support;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use booblik_client::{Connection, Dialer, Redial};
use support::{FakeBroker, test_config};

const SLOW_CONNECT: Duration = Duration::from_secs(5);
const PATIENCE: Duration = Duration::from_millis(100);

#[tokio::test]
async fn a_second_caller_is_answered_while_the_first_callers_connect_hangs() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    // The connections the dialer hands out are opened before the clock is paused, so the part
    // of the test that is timed does no socket I/O.
    let slow = Connection::connect(&broker.addr(), test_config())
        .await
        .unwrap();
    let fast = Connection::connect(&broker.addr(), test_config())
        .await
        .unwrap();
    let dials = Arc::new(Mutex::new(VecDeque::from([
        (SLOW_CONNECT, slow.clone()),
        (Duration::ZERO, fast.clone()),
    ])));
    let dialer: Dialer = Arc::new(move || {
        let (delay, connection) = dials
            .lock()
            .unwrap()
            .pop_front()
            .expect("no more than two dials");
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            Ok(connection)
        })
    });
    let redial = Redial::with_dialer(broker.addr(), dialer);
    tokio::time::pause();

    let first = tokio::spawn({
        let redial = redial.clone();
        async move { redial.connection().await }
    });
    // Let the first caller start its dial and reach the 5 s sleep.
    tokio::task::yield_now().await;
    tokio::task::yield_now().await;

    let second = tokio::time::timeout(PATIENCE, redial.connection())
        .await
        .expect("the second caller waited for the first caller's connect")
        .expect("the second dial succeeds");
    assert!(
        second.is_same(&fast),
        "the second caller got its own dial's connection"
    );
    assert_eq!(redial.connections_opened(), 1);

    let first = first.await.unwrap().expect("the first dial succeeds too");
    assert!(
        first.is_same(&fast),
        "the slow caller shares the connection installed meanwhile"
    );
    assert!(slow.is_closed(), "the losing connection is closed");
    assert_eq!(redial.connections_opened(), 1);
}
