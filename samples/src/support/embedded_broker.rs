//! A broker inside the calling process, for the demo and the tests: the same `Broker` the
//! `booblik-broker` binary runs, started with settings suited to a laptop.

use std::net::SocketAddr;
use std::path::Path;

use anyhow::Context;
use booblik_broker::{Broker, BrokerConfig, parse_topics};

/// The topics the demo creates (the same as the broker binary's default).
pub const DEMO_TOPICS: &str = "events:3,tasks:1,claims:1";

/// Segment size for embedded brokers. Smaller than the broker's default so that a demo or test
/// directory stays small on file systems that do not keep pre-sized files sparse.
pub const EMBEDDED_SEGMENT_BYTES: u64 = 16 * 1024 * 1024;

/// Starts a broker on `bind` (port 0 picks a free one: see [`Broker::local_addr`]) with its log
/// in `data_dir` and the topics of `topics` (`name:partitions,…`).
pub async fn start(data_dir: &Path, bind: SocketAddr, topics: &str) -> anyhow::Result<Broker> {
    let topics = parse_topics(topics)
        .map_err(|reason| anyhow::anyhow!("invalid topic list {topics:?}: {reason}"))?;
    let mut config = BrokerConfig {
        bind,
        topics,
        ..BrokerConfig::default()
    };
    config.storage.data_dir = data_dir.to_path_buf();
    config.storage.segment_bytes = EMBEDDED_SEGMENT_BYTES;
    Broker::start(config)
        .await
        .with_context(|| format!("cannot start a broker on {bind} in {}", data_dir.display()))
}
