//! Topic names: 1..=249 characters, each a letter, digit, `.`, `_` or `-`.

use std::fmt;

/// Longest topic name, in characters (all allowed characters are ASCII, so also in bytes).
pub const MAX_TOPIC_NAME_CHARS: usize = 249;

/// A validated topic name. Cheap to clone (a shared string): every request carries one.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicName(std::sync::Arc<str>);

/// Why a string is not a topic name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopicNameError {
    /// The empty string.
    #[error("topic name is empty")]
    Empty,
    /// More than [`MAX_TOPIC_NAME_CHARS`] characters.
    #[error("topic name has {len} characters, more than {max}", max = MAX_TOPIC_NAME_CHARS)]
    TooLong {
        /// Length in characters.
        len: usize,
    },
    /// A character outside `[A-Za-z0-9._-]`.
    #[error(
        "topic name contains {ch:?} at position {position}; allowed are letters, digits, '.', '_' and '-'"
    )]
    InvalidChar {
        /// The offending character.
        ch: char,
        /// Its index in characters.
        position: usize,
    },
}

impl TopicName {
    /// Validates `name`.
    pub fn new(name: impl Into<String>) -> Result<Self, TopicNameError> {
        let name = name.into();
        if name.is_empty() {
            return Err(TopicNameError::Empty);
        }
        for (position, ch) in name.chars().enumerate() {
            if !(ch.is_ascii_alphanumeric() || matches!(ch, '.' | '_' | '-')) {
                return Err(TopicNameError::InvalidChar { ch, position });
            }
        }
        // Only ASCII passed the loop, so bytes == characters.
        if name.len() > MAX_TOPIC_NAME_CHARS {
            return Err(TopicNameError::TooLong { len: name.len() });
        }
        Ok(Self(name.into()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TopicName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for TopicName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl std::str::FromStr for TopicName {
    type Err = TopicNameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl AsRef<str> for TopicName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_at_the_limits_are_accepted() {
        assert!(TopicName::new("a").is_ok());
        assert!(TopicName::new("a".repeat(249)).is_ok());
        assert!(TopicName::new("Events.v1_raw-2").is_ok());
    }

    #[test]
    fn names_outside_the_rules_are_refused() {
        assert_eq!(TopicName::new(""), Err(TopicNameError::Empty));
        assert_eq!(
            TopicName::new("a".repeat(250)),
            Err(TopicNameError::TooLong { len: 250 })
        );
        assert_eq!(
            TopicName::new("a/b"),
            Err(TopicNameError::InvalidChar {
                ch: '/',
                position: 1
            })
        );
        assert!(matches!(
            TopicName::new("тема"),
            Err(TopicNameError::InvalidChar { .. })
        ));
        assert!(matches!(
            TopicName::new("a b"),
            Err(TopicNameError::InvalidChar { .. })
        ));
    }
}
