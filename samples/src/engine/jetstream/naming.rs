//! How a booblik topic partition is named on JetStream: one stream per partition.
//!
//! ```text
//!   topic "user.events", partition 2
//!     stream   BOOBLIK-user_devents-P2     (stream names may not hold '.', '*', '>', '/', '\', blanks)
//!     subject  booblik.user_devents.2      ('.' separates subject tokens, so it is escaped too)
//! ```
//!
//! A topic name is booblik's: 1..=249 of letters, digits, `.`, `_`, `-`. The escape turns `_`
//! into `__` and `.` into `_d`, so it is reversible and two topics never share a stream. The
//! partition goes last, after `-P`, so a topic that itself ends in `-P7` still parses: the
//! partition is the digits after the *last* `-P`. The relay names streams the same way.

use std::fmt::Write as _;

/// Every stream this naming makes starts with this.
pub const STREAM_PREFIX: &str = "BOOBLIK-";
/// Every subject this naming makes starts with this token.
pub const SUBJECT_PREFIX: &str = "booblik";
/// The longest stream name JetStream accepts (nats-server's `JSMaxNameLen`). A topic whose
/// escaped name would be longer is refused, not truncated: truncation could make two topics
/// share a stream.
pub const MAX_STREAM_NAME_BYTES: usize = 255;

/// Why a topic cannot be named on JetStream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NamingError {
    /// A character outside booblik's topic alphabet.
    #[error("topic {0:?} holds a character outside letters, digits, '.', '_', '-'")]
    BadTopic(String),
    /// The stream name would exceed [`MAX_STREAM_NAME_BYTES`].
    #[error(
        "topic {topic:?} partition {partition}: stream name of {bytes} bytes exceeds {MAX_STREAM_NAME_BYTES}"
    )]
    TooLong {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The stream name's length.
        bytes: usize,
    },
    /// A negative partition.
    #[error("partition {0} is negative")]
    BadPartition(i32),
}

/// The stream holding `topic`'s partition `partition`.
pub fn stream_name(topic: &str, partition: i32) -> Result<String, NamingError> {
    if partition < 0 {
        return Err(NamingError::BadPartition(partition));
    }
    let name = format!("{STREAM_PREFIX}{}-P{partition}", escape(topic)?);
    if name.len() > MAX_STREAM_NAME_BYTES {
        return Err(NamingError::TooLong {
            topic: topic.to_owned(),
            partition,
            bytes: name.len(),
        });
    }
    Ok(name)
}

/// The one subject the stream of `topic`'s partition `partition` captures.
pub fn subject(topic: &str, partition: i32) -> Result<String, NamingError> {
    if partition < 0 {
        return Err(NamingError::BadPartition(partition));
    }
    Ok(format!("{SUBJECT_PREFIX}.{}.{partition}", escape(topic)?))
}

/// The (topic, partition) a stream of this naming holds, or `None` for any other stream.
pub fn parse_stream_name(stream: &str) -> Option<(String, i32)> {
    let rest = stream.strip_prefix(STREAM_PREFIX)?;
    let (escaped, partition) = rest.rsplit_once("-P")?;
    if partition.is_empty() || !partition.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let partition = partition.parse().ok()?;
    Some((unescape(escaped)?, partition))
}

fn escape(topic: &str) -> Result<String, NamingError> {
    if topic.is_empty() {
        return Err(NamingError::BadTopic(topic.to_owned()));
    }
    let mut out = String::with_capacity(topic.len() + 8);
    for c in topic.chars() {
        match c {
            '_' => out.push_str("__"),
            '.' => out.push_str("_d"),
            c if c.is_ascii_alphanumeric() || c == '-' => out.push(c),
            _ => return Err(NamingError::BadTopic(topic.to_owned())),
        }
    }
    Ok(out)
}

fn unescape(escaped: &str) -> Option<String> {
    let mut out = String::with_capacity(escaped.len());
    let mut chars = escaped.chars();
    while let Some(c) = chars.next() {
        if c == '_' {
            match chars.next()? {
                '_' => out.push('_'),
                'd' => out.push('.'),
                _ => return None,
            }
        } else {
            let _ = write!(out, "{c}");
        }
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn dots_and_underscores_are_escaped_in_stream_and_subject() {
        assert_eq!(
            stream_name("user.events_v2", 3).unwrap(),
            "BOOBLIK-user_devents__v2-P3"
        );
        assert_eq!(
            subject("user.events_v2", 3).unwrap(),
            "booblik.user_devents__v2.3"
        );
    }

    #[test]
    fn a_topic_ending_in_a_partition_suffix_still_parses() {
        let name = stream_name("orders-P7", 12).unwrap();
        assert_eq!(parse_stream_name(&name), Some(("orders-P7".to_owned(), 12)));
    }

    #[test]
    fn names_outside_the_alphabet_or_too_long_are_refused() {
        assert!(matches!(
            stream_name("a b", 0),
            Err(NamingError::BadTopic(_))
        ));
        assert!(matches!(stream_name("", 0), Err(NamingError::BadTopic(_))));
        assert!(matches!(
            stream_name("a", -1),
            Err(NamingError::BadPartition(-1))
        ));
        let dots = ".".repeat(249);
        assert!(matches!(
            stream_name(&dots, 0),
            Err(NamingError::TooLong { .. })
        ));
    }

    #[test]
    fn other_streams_are_not_ours() {
        assert_eq!(parse_stream_name("ORDERS"), None);
        assert_eq!(parse_stream_name("BOOBLIK-x-P"), None);
        assert_eq!(parse_stream_name("BOOBLIK-x_q-P1"), None);
    }

    proptest! {
        #[test]
        fn naming_is_reversible_and_never_forbidden(
            topic in "[A-Za-z0-9._-]{1,100}",
            partition in 0..10_000i32,
        ) {
            let stream = stream_name(&topic, partition).unwrap();
            prop_assert!(!stream.contains(['.', '*', '>', '/', '\\', ' ']));
            prop_assert_eq!(parse_stream_name(&stream), Some((topic.clone(), partition)));
            let subject = subject(&topic, partition).unwrap();
            prop_assert_eq!(subject.matches('.').count(), 2);
        }
    }
}
