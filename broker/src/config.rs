//! Broker configuration: one struct for embedding, filled from flags or `BOOBLIK_*` variables by
//! the binary.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;

use booblik_protocol::TopicName;

use crate::storage::StorageConfig;

/// How FETCH payloads leave the broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FetchMode {
    /// `sendfile(2)` from the segment file to the socket: the bytes never enter user space.
    #[default]
    ZeroCopy,
    /// Read the bytes into a heap buffer, then write them. A measured control for zero-copy.
    Heap,
}

impl FromStr for FetchMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "zero-copy" => Ok(Self::ZeroCopy),
            "heap" => Ok(Self::Heap),
            other => Err(format!(
                "unknown fetch mode {other:?}: use zero-copy or heap"
            )),
        }
    }
}

/// Longest a FETCH v2 may wait, whatever the client asks: 60 s, the protocol's
/// [`booblik_protocol::MAX_FETCH_WAIT_MS`].
pub const MAX_FETCH_WAIT_MS: u64 = booblik_protocol::MAX_FETCH_WAIT_MS as u64;

/// Largest [`BrokerConfig::max_connections`] accepted: 2²⁰, far beyond any process's file
/// descriptors. The limit is a semaphore, and tokio's panics (inside the accept task, after
/// `Broker::start` returned `Ok`) above `Semaphore::MAX_PERMITS`.
pub const MAX_CONNECTIONS_LIMIT: usize = 1 << 20;

/// Largest timeout accepted for [`BrokerConfig::frame_read_timeout_ms`],
/// [`BrokerConfig::idle_timeout_ms`] and [`BrokerConfig::write_timeout_ms`]: one day. Sessions
/// add these to the current instant, which panics on overflow for values near `u64::MAX`; a day
/// is far beyond any sensible wait and far below that.
pub const MAX_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;

/// A [`BrokerConfig`] value outside its allowed range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid broker configuration: {reason}")]
pub struct InvalidConfig {
    /// Which value, and its allowed range.
    pub reason: String,
}

/// Everything a broker needs to start.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// Address to listen on. Port 0 picks a free port (see [`crate::Broker::local_addr`]).
    pub bind: SocketAddr,
    /// Topics and their partition counts, fixed for the life of the process.
    pub topics: Vec<(TopicName, u32)>,
    /// Storage settings: data directory, segment size, write mode, retention.
    pub storage: StorageConfig,
    /// How FETCH payloads are sent.
    pub fetch_mode: FetchMode,
    /// Open connections allowed at once; a connection beyond it is accepted and closed at once.
    pub max_connections: usize,
    /// A frame that has started arriving must be complete within this time (slow-loris guard).
    pub frame_read_timeout_ms: u64,
    /// A connection with no complete request for this long is closed.
    pub idle_timeout_ms: u64,
    /// A response that cannot be written within this time (the client stopped reading) closes
    /// the connection.
    pub write_timeout_ms: u64,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 9092)),
            topics: parse_topics("events:3,tasks:1,claims:1").expect("default topics are valid"),
            storage: StorageConfig {
                data_dir: PathBuf::from("booblik-data"),
                ..StorageConfig::default()
            },
            fetch_mode: FetchMode::ZeroCopy,
            max_connections: 1024,
            frame_read_timeout_ms: 30_000,
            idle_timeout_ms: 600_000,
            write_timeout_ms: 30_000,
        }
    }
}

impl BrokerConfig {
    /// Checks the values a broker cannot honour: `max_connections` in
    /// `1..=`[`MAX_CONNECTIONS_LIMIT`], each timeout in `1..=`[`MAX_TIMEOUT_MS`] (zero would
    /// close every connection at once). [`Broker::start`](crate::Broker::start) calls it; the
    /// storage settings are checked by the storage when it opens.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        if !(1..=MAX_CONNECTIONS_LIMIT).contains(&self.max_connections) {
            return Err(InvalidConfig {
                reason: format!(
                    "max_connections = {} is outside 1..={MAX_CONNECTIONS_LIMIT}",
                    self.max_connections
                ),
            });
        }
        for (name, value) in [
            ("frame_read_timeout_ms", self.frame_read_timeout_ms),
            ("idle_timeout_ms", self.idle_timeout_ms),
            ("write_timeout_ms", self.write_timeout_ms),
        ] {
            if !(1..=MAX_TIMEOUT_MS).contains(&value) {
                return Err(InvalidConfig {
                    reason: format!("{name} = {value} is outside 1..={MAX_TIMEOUT_MS}"),
                });
            }
        }
        let partitions: u64 = self.topics.iter().map(|(_, n)| u64::from(*n)).sum();
        if partitions > u64::from(MAX_PARTITIONS_PER_BROKER) {
            return Err(InvalidConfig {
                reason: format!(
                    "{partitions} partitions over all topics, more than {MAX_PARTITIONS_PER_BROKER}"
                ),
            });
        }
        Ok(())
    }
}

/// Longest partition count a topic may have.
pub const MAX_PARTITIONS_PER_TOPIC: u32 = 1024;

/// Most partitions one broker serves, over all topics. Each partition costs a writer thread, an
/// open segment file (and a mapping in MAPPED mode); and a METADATA answer naming every
/// partition (20 bytes each, plus at most 251 bytes per topic name) must fit one frame: at this
/// limit it stays under 1.1 MiB, far below `MAX_FRAME_BYTES`.
pub const MAX_PARTITIONS_PER_BROKER: u32 = 4096;

/// Parses `name:partitions,name:partitions,…` (a bare `name` means one partition).
pub fn parse_topics(spec: &str) -> Result<Vec<(TopicName, u32)>, String> {
    let mut topics: Vec<(TopicName, u32)> = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, count) = match item.split_once(':') {
            Some((name, count)) => {
                let count: u32 = count
                    .parse()
                    .map_err(|_| format!("{item:?}: partition count {count:?} is not a number"))?;
                (name, count)
            }
            None => (item, 1),
        };
        if count == 0 || count > MAX_PARTITIONS_PER_TOPIC {
            return Err(format!(
                "{item:?}: partition count must be 1..={MAX_PARTITIONS_PER_TOPIC}"
            ));
        }
        let name = TopicName::new(name).map_err(|e| format!("{item:?}: {e}"))?;
        if topics.iter().any(|(t, _)| *t == name) {
            return Err(format!("topic {name} is listed twice"));
        }
        topics.push((name, count));
    }
    if topics.is_empty() {
        return Err("at least one topic is required".into());
    }
    Ok(topics)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_config_is_valid() {
        BrokerConfig::default().validate().unwrap();
    }

    #[test]
    fn more_partitions_than_a_broker_serves_are_refused() {
        let at_limit = format!(
            "a:{MAX_PARTITIONS_PER_TOPIC},b:{MAX_PARTITIONS_PER_TOPIC},c:{MAX_PARTITIONS_PER_TOPIC},d:{MAX_PARTITIONS_PER_TOPIC}"
        );
        let config = BrokerConfig {
            topics: parse_topics(&at_limit).unwrap(),
            ..BrokerConfig::default()
        };
        config.validate().unwrap();
        let config = BrokerConfig {
            topics: parse_topics(&format!("{at_limit},e")).unwrap(),
            ..BrokerConfig::default()
        };
        let refused = config.validate().unwrap_err();
        assert!(
            refused.reason.contains("4097 partitions"),
            "{}",
            refused.reason
        );
    }

    #[test]
    fn connection_limits_outside_one_to_the_maximum_are_refused() {
        for max_connections in [0, MAX_CONNECTIONS_LIMIT + 1, usize::MAX] {
            let config = BrokerConfig {
                max_connections,
                ..BrokerConfig::default()
            };
            let error = config.validate().unwrap_err();
            assert!(error.reason.contains("max_connections"), "{error}");
        }
        for max_connections in [1, MAX_CONNECTIONS_LIMIT] {
            let config = BrokerConfig {
                max_connections,
                ..BrokerConfig::default()
            };
            config.validate().unwrap();
        }
    }

    #[test]
    fn zero_or_overflowing_timeouts_are_refused_naming_the_setting() {
        type Set = fn(&mut BrokerConfig, u64);
        let setters: [(&str, Set); 3] = [
            ("frame_read_timeout_ms", |c, v| c.frame_read_timeout_ms = v),
            ("idle_timeout_ms", |c, v| c.idle_timeout_ms = v),
            ("write_timeout_ms", |c, v| c.write_timeout_ms = v),
        ];
        for (name, set) in setters {
            for bad in [0, MAX_TIMEOUT_MS + 1, u64::MAX] {
                let mut config = BrokerConfig::default();
                set(&mut config, bad);
                let error = config.validate().unwrap_err();
                assert!(error.reason.starts_with(name), "{name} = {bad}: {error}");
            }
            for good in [1, MAX_TIMEOUT_MS] {
                let mut config = BrokerConfig::default();
                set(&mut config, good);
                config.validate().unwrap();
            }
        }
    }

    #[test]
    fn topic_lists_parse_with_default_partition_count_one() {
        let t = parse_topics("events:3, tasks ,claims:1").unwrap();
        let got: Vec<(&str, u32)> = t.iter().map(|(n, c)| (n.as_str(), *c)).collect();
        assert_eq!(got, vec![("events", 3), ("tasks", 1), ("claims", 1)]);
    }

    #[test]
    fn bad_topic_lists_are_refused_with_the_reason() {
        assert!(parse_topics("").unwrap_err().contains("at least one"));
        assert!(parse_topics("a:0").unwrap_err().contains("partition count"));
        assert!(parse_topics("a:x").unwrap_err().contains("not a number"));
        assert!(parse_topics("a/b:1").unwrap_err().contains("'/'"));
        assert!(parse_topics("a,a").unwrap_err().contains("twice"));
    }
}
