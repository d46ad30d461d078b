//! [`UserEvent`]: the record every events sample reads and writes, and its encoding at rest.
//!
//! # Why a version byte in front of postcard
//!
//! A log keeps records far longer than the code that wrote them runs, so the encoding must be
//! stable and must say which layout it is. Each record is one format-version byte
//! ([`FORMAT_VERSION`]) followed by the postcard encoding of the event (postcard: a serde format
//! with a documented, stable wire specification; `docs/` records why not bincode). Postcard is not
//! self-describing — adding or reordering a field silently changes what the bytes mean — so a new
//! layout gets a new version byte, and a reader refuses a version it does not know
//! ([`DecodeError::UnsupportedVersion`]) instead of misreading it.
//!
//! # Why these fields
//!
//! * `user_id` is also the record's **key**: the shared partitioner sends every event of one user
//!   to the same partition, and a partition is the unit of order. That is what lets a consumer
//!   check per-user order at all.
//! * `seq` counts one user's events *as one publisher sent them* (0, 1, 2, …). A reader that sees
//!   a user's `seq` go down at a new offset has found an order violation.
//! * `publisher_id` names the publisher run that assigned `seq`: a restarted publisher starts
//!   counting again, and two publishers count independently. Order is only checked within one
//!   publisher's sequence.
//! * `at_ms` is the publisher's wall clock, for people reading the data; no sample decides
//!   anything by it.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The format version this code writes and the only one it reads.
pub const FORMAT_VERSION: u8 = 1;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum EventKind {
    /// The user's first event from a publisher.
    SignedUp,
    /// A login.
    LoggedIn,
    /// A page view.
    ViewedPage,
    /// An item went into the cart.
    AddedToCart,
    /// A purchase.
    Purchased,
    /// A logout.
    LoggedOut,
}

/// One event of one user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserEvent {
    /// The publisher run that assigned `seq`.
    pub publisher_id: Uuid,
    /// The user, and the record's key.
    pub user_id: String,
    /// This user's sequence number within the publisher run, from 0, without gaps as sent.
    pub seq: u64,
    /// What happened.
    pub kind: EventKind,
    /// Publisher's wall clock, milliseconds since the Unix epoch.
    pub at_ms: u64,
}

/// Why bytes are not a [`UserEvent`] this code understands.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// No bytes at all.
    #[error("empty record: no format-version byte")]
    Empty,
    /// A version byte this code does not know.
    #[error("unsupported event format version {found} (this reader knows {FORMAT_VERSION})")]
    UnsupportedVersion {
        /// The version byte found.
        found: u8,
    },
    /// The body is not a postcard-encoded event.
    #[error("malformed event body: {0}")]
    Malformed(#[from] postcard::Error),
    /// A whole event was decoded and bytes were left over.
    #[error("{count} trailing bytes after a complete event")]
    TrailingBytes {
        /// How many bytes were left.
        count: usize,
    },
}

impl UserEvent {
    /// The record key: the user id, so one user's events share a partition.
    pub fn key(&self) -> &[u8] {
        self.user_id.as_bytes()
    }

    /// `[FORMAT_VERSION][postcard(self)]`.
    pub fn encode(&self) -> Vec<u8> {
        let mut bytes = vec![FORMAT_VERSION];
        // Writing strings, integers, a UUID and a unit enum into a Vec cannot fail.
        postcard::to_io(self, &mut bytes).expect("postcard cannot fail on a UserEvent");
        bytes
    }

    /// Decodes what [`UserEvent::encode`] wrote. Never panics, whatever the bytes.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let (&version, body) = bytes.split_first().ok_or(DecodeError::Empty)?;
        if version != FORMAT_VERSION {
            return Err(DecodeError::UnsupportedVersion { found: version });
        }
        let (event, rest) = postcard::take_from_bytes::<Self>(body)?;
        if !rest.is_empty() {
            return Err(DecodeError::TrailingBytes { count: rest.len() });
        }
        Ok(event)
    }
}
