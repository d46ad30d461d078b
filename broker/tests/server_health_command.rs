//! `booblik-broker health` exits 0 only when a broker answers METADATA.

mod support;

use std::process::Command;

use support::TestBroker;

#[tokio::test]
async fn health_succeeds_against_a_running_broker_and_fails_without_one() {
    let broker = TestBroker::start().await;
    let addr = broker.broker.local_addr().to_string();
    let ok = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_booblik-broker"))
            .args(["health", "--broker", &addr])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(String::from_utf8_lossy(&ok.stdout).contains("events:3"));

    // A port nobody listens on: bind one, learn it, close it.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let failed = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_booblik-broker"))
            .args(["health", "--broker", &closed, "--timeout-ms", "1000"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(!failed.status.success());
}
