//! The two ends of a relay, written as URLs.
//!
//! ```text
//!   booblik://127.0.0.1:9092/events              one broker, topic "events"
//!   jetstream://127.0.0.1:4222,127.0.0.1:4223/events
//!                                                any nodes of a NATS cluster; the topic's
//!                                                partitions are its streams (engine::jetstream::naming)
//!   kafka://127.0.0.1:9092,127.0.0.1:9093/events
//!                                                bootstrap brokers of a Kafka cluster (feature `kafka`)
//! ```
//!
//! Without the cargo feature `kafka`, `kafka://` is recognised only to say that this build has
//! no Kafka client (see `docs/relay.md`): a clear refusal, not "unknown scheme".

use std::fmt;
use std::str::FromStr;

/// One end of a relay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A booblik broker and one of its topics.
    Booblik {
        /// `host:port`.
        addr: String,
        /// The topic.
        topic: String,
    },
    /// A NATS JetStream cluster and a topic named as the JetStream engine names it.
    JetStream {
        /// `nats://host:port` of every node given.
        urls: Vec<String>,
        /// The topic.
        topic: String,
    },
    /// A Kafka cluster (its bootstrap brokers) and a topic (only with the feature `kafka`).
    Kafka {
        /// `host:port` of every bootstrap broker given.
        brokers: Vec<String>,
        /// The topic.
        topic: String,
    },
}

/// Why an endpoint URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    /// No `scheme://`.
    #[error("{0:?}: expected booblik://host:port/topic or jetstream://host:port[,host:port]/topic")]
    Shape(String),
    /// A scheme this build cannot talk to.
    #[error("{url:?}: {why}")]
    Scheme {
        /// The URL.
        url: String,
        /// Why not.
        why: String,
    },
    /// A host list or topic that is empty or malformed.
    #[error("{url:?}: {why}")]
    Part {
        /// The URL.
        url: String,
        /// What is wrong.
        why: String,
    },
}

impl Endpoint {
    /// The topic on this end.
    pub fn topic(&self) -> &str {
        match self {
            Endpoint::Booblik { topic, .. }
            | Endpoint::JetStream { topic, .. }
            | Endpoint::Kafka { topic, .. } => topic,
        }
    }
}

impl FromStr for Endpoint {
    type Err = EndpointError;

    fn from_str(url: &str) -> Result<Self, Self::Err> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| EndpointError::Shape(url.to_owned()))?;
        let (hosts, topic) = rest
            .split_once('/')
            .ok_or_else(|| EndpointError::Shape(url.to_owned()))?;
        let part = |why: &str| EndpointError::Part {
            url: url.to_owned(),
            why: why.to_owned(),
        };
        // The topic alphabet is booblik's (the JetStream naming escapes it); checked here so a
        // typo fails before any connection is made.
        if topic.is_empty()
            || !topic
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        {
            return Err(part(
                "the topic must be 1+ of letters, digits, '.', '_', '-'",
            ));
        }
        let hosts: Vec<&str> = hosts.split(',').collect();
        if hosts.iter().any(|h| h.is_empty() || !h.contains(':')) {
            return Err(part("every host must be host:port"));
        }
        let topic = topic.to_owned();
        match scheme {
            "booblik" => {
                let [addr] = hosts[..] else {
                    return Err(part("a booblik endpoint names one broker"));
                };
                Ok(Endpoint::Booblik {
                    addr: addr.to_owned(),
                    topic,
                })
            }
            "jetstream" => Ok(Endpoint::JetStream {
                urls: hosts.iter().map(|h| format!("nats://{h}")).collect(),
                topic,
            }),
            "kafka" if cfg!(feature = "kafka") => Ok(Endpoint::Kafka {
                brokers: hosts.iter().map(|h| (*h).to_owned()).collect(),
                topic,
            }),
            "kafka" => Err(EndpointError::Scheme {
                url: url.to_owned(),
                why: "this build has no Kafka client: build with `--features kafka` (see docs/relay.md)"
                    .into(),
            }),
            other => Err(EndpointError::Scheme {
                url: url.to_owned(),
                why: format!("unknown scheme {other:?}: booblik, jetstream or kafka"),
            }),
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Booblik { addr, topic } => write!(f, "booblik://{addr}/{topic}"),
            Endpoint::JetStream { urls, topic } => {
                let hosts: Vec<&str> = urls
                    .iter()
                    .map(|u| u.strip_prefix("nats://").unwrap_or(u))
                    .collect();
                write!(f, "jetstream://{}/{topic}", hosts.join(","))
            }
            Endpoint::Kafka { brokers, topic } => {
                write!(f, "kafka://{}/{topic}", brokers.join(","))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_schemes_parse_and_print_back() {
        for url in [
            "booblik://127.0.0.1:9092/events",
            "jetstream://a:4222,b:4223/user.events_v2",
        ] {
            let endpoint: Endpoint = url.parse().unwrap();
            assert_eq!(endpoint.to_string(), url);
        }
        assert_eq!(
            "jetstream://a:1/t".parse::<Endpoint>().unwrap(),
            Endpoint::JetStream {
                urls: vec!["nats://a:1".into()],
                topic: "t".into()
            }
        );
    }

    #[test]
    fn bad_urls_are_refused_with_a_reason() {
        for url in [
            "events",
            "booblik://h:1",
            "booblik://h:1/",
            "booblik://h:1,g:2/t",
            "booblik://h/t",
            "booblik://h:1/a b",
            "redis://h:1/t",
            "kafka://h/t",
        ] {
            assert!(url.parse::<Endpoint>().is_err(), "{url} parsed");
        }
    }

    #[test]
    fn kafka_parses_only_where_the_build_has_a_client() {
        let parsed = "kafka://a:9092,b:9093/events".parse::<Endpoint>();
        if cfg!(feature = "kafka") {
            assert_eq!(parsed.unwrap().to_string(), "kafka://a:9092,b:9093/events");
        } else {
            let error = parsed.unwrap_err().to_string();
            assert!(error.contains("--features kafka"), "{error}");
        }
    }
}
