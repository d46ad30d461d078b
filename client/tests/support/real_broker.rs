//! The real broker (`booblik_broker::Broker`), embedded on a free loopback port with its data in
//! a temporary directory: the client's behaviour checked against the server it ships with.

use booblik_broker::{Broker, BrokerConfig, parse_topics};
use tempfile::TempDir;

/// Segment size for tests: small enough that RECORD_TOO_LARGE is easy to reach.
pub const TEST_SEGMENT_BYTES: u64 = 1024 * 1024;

/// A running broker and the directory it owns.
pub struct RealBroker {
    broker: Broker,
    _dir: TempDir,
}

impl RealBroker {
    /// Starts a broker with `topics` (`name:partitions,…`).
    pub async fn start(topics: &str) -> RealBroker {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut config = BrokerConfig {
            bind: "127.0.0.1:0".parse().unwrap(),
            topics: parse_topics(topics).expect("valid topics"),
            ..BrokerConfig::default()
        };
        config.storage.data_dir = dir.path().to_path_buf();
        config.storage.segment_bytes = TEST_SEGMENT_BYTES;
        let broker = Broker::start(config).await.expect("the broker starts");
        RealBroker { broker, _dir: dir }
    }

    /// `host:port` to connect to.
    pub fn addr(&self) -> String {
        self.broker.local_addr().to_string()
    }

    /// Stops the broker.
    pub async fn stop(self) {
        self.broker
            .shutdown()
            .await
            .expect("the broker stops cleanly");
    }
}
