//! A configuration the broker cannot honour is refused when it starts, naming the setting: from
//! `Broker::start` as `BrokerError::Config`, and from the binary as an error exit. A connection
//! limit above the semaphore's maximum used to start "successfully" and then panic inside the
//! accept task; a limit or a timeout of zero used to be taken silently.

mod support;

use std::process::Stdio;
use std::time::Duration;

use booblik_broker::config::MAX_CONNECTIONS_LIMIT;
use booblik_broker::{Broker, BrokerError};
use support::test_config;

#[tokio::test]
async fn broker_start_refuses_connection_limits_and_timeouts_it_cannot_honour() {
    type Set = fn(&mut booblik_broker::BrokerConfig);
    let cases: [(&str, Set); 5] = [
        ("max_connections", |c| c.max_connections = 0),
        ("max_connections", |c| c.max_connections = usize::MAX),
        ("frame_read_timeout_ms", |c| c.frame_read_timeout_ms = 0),
        ("idle_timeout_ms", |c| c.idle_timeout_ms = u64::MAX),
        ("write_timeout_ms", |c| c.write_timeout_ms = 0),
    ];
    for (name, set) in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut config = test_config(&dir);
        set(&mut config);
        match Broker::start(config).await {
            Err(BrokerError::Config(error)) => {
                assert!(error.to_string().contains(name), "{name}: {error}");
            }
            Err(other) => panic!("{name}: expected a configuration error, got {other}"),
            Ok(broker) => {
                broker.shutdown().await.ok();
                panic!("{name}: the broker started");
            }
        }
    }
    // The largest limit is honoured.
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(&dir);
    config.max_connections = MAX_CONNECTIONS_LIMIT;
    let broker = Broker::start(config).await.expect("the broker starts");
    support::RawConn::connect(broker.local_addr())
        .await
        .metadata(&[])
        .await
        .expect_ok();
    broker.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_binary_exits_with_an_error_naming_the_flag_value() {
    let dir = tempfile::tempdir().unwrap();
    for max_connections in ["0", &usize::MAX.to_string()] {
        let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_booblik-broker"))
            .args([
                "--bind",
                "127.0.0.1:0",
                "--max-connections",
                max_connections,
            ])
            .arg("--data-dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the broker binary runs");
        let output = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
            .await
            .unwrap_or_else(|_| panic!("--max-connections {max_connections}: still running"))
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{max_connections}: {stderr}");
        assert!(
            stderr.contains("invalid broker configuration")
                && stderr.contains(&format!("max_connections = {max_connections}")),
            "{max_connections}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
