//! Records of the task queue and their versioned binary encoding.
//!
//! The queue lives in two topics, and each has one record type:
//!
//! * `tasks` holds [`Task`] records: work to be done.
//! * `claims` holds [`ClaimsRecord`]s: a [`Claim`] asks for a task, an [`Extend`] renews the
//!   lease of the current holder, a [`Done`] commits a result, a [`Release`] hands a task back,
//!   a [`Heartbeat`] says an idle worker is alive.
//!
//! # Why a version byte in front of postcard
//!
//! Records at rest outlive the code that wrote them, so every encoded record starts with one
//! format-version byte ([`FORMAT_VERSION`]) followed by the postcard encoding of the record
//! (postcard is a serde format with a documented, stable wire specification). Postcard itself is
//! not self-describing: a field added, removed or reordered silently changes what the bytes mean.
//! The version byte makes such a change explicit — a new layout gets a new version, and a reader
//! that does not know a version refuses it with [`DecodeError::UnsupportedVersion`] instead of
//! misreading it.
//!
//! Decoding never panics: empty input, an unknown version, truncated or garbage bytes, and
//! trailing bytes after a complete record are all typed [`DecodeError`]s.
//!
//! A consequence worth knowing before bumping the version: the verdict over the claims log must be
//! the same for every reader (see [`crate::queue::state`]). A record that some readers can decode
//! and others skip would split their verdicts. A new version may therefore only be *written*
//! after every reader has been upgraded to *read* it.
//!
//! # Rolling out a new record kind: protocol levels
//!
//! The same rule holds for a new *kind* of record — a new variant at the end of
//! [`ClaimsRecord`], which keeps format version 1: a reader that does not know the variant
//! refuses it as [`DecodeError::Malformed`] and skips it, while readers that know it apply it,
//! and their verdicts split. So reading and writing are rolled out apart: this code *reads* every
//! kind it knows, always, and *writes* the newer kinds only when its [`ProtocolLevel`] says so.
//!
//! 1. Upgrade every reader (every worker, the verifier, the load harness) with the writers held
//!    at the old level ([`ProtocolLevel::V1`], the default).
//! 2. Once no reader of the old code is left, raise the level of the writers
//!    (`--protocol-level 2`).
//!
//! Going back down is the same in reverse: lower the writers first; readers that know the new
//! kinds keep reading the ones already in the log.
mod claims;
mod task;

pub use claims::{Claim, ClaimsRecord, Done, Extend, Heartbeat, Release};
pub use task::Task;

use serde::{Serialize, de::DeserializeOwned};

/// The format version this code writes and the only one it reads.
pub const FORMAT_VERSION: u8 = 1;

/// Which record kinds a writer may write (readers read every kind this code knows, whatever
/// the level). See the module docs for the rollout it gates.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
pub enum ProtocolLevel {
    /// `Claim`, `Extend`, `Done`: what every reader since the first release knows. The
    /// default, so that a fleet upgraded one worker at a time never writes a record some of its
    /// readers would skip.
    #[default]
    V1,
    /// Also `Release` (variant 3): a holder that stops cleanly hands its task back at once; and
    /// `Heartbeat` (variant 4): an idle worker's sign of life, which
    /// [`Pick::Rendezvous`](crate::queue::pick::Pick) needs. Raise a fleet to it only once every
    /// reader runs code that knows both.
    V2,
}

impl ProtocolLevel {
    /// Whether a writer at this level writes [`Release`] records.
    pub fn writes_releases(self) -> bool {
        self >= Self::V2
    }

    /// Whether a writer at this level writes [`Heartbeat`] records.
    pub fn writes_heartbeats(self) -> bool {
        self >= Self::V2
    }
}

/// Why a byte string is not a record this code understands.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// There were no bytes at all, not even the version byte.
    #[error("empty record: no format-version byte")]
    Empty,
    /// The version byte names a format this code does not know.
    #[error(
        "unsupported record format version {found} (this reader knows version {FORMAT_VERSION})"
    )]
    UnsupportedVersion {
        /// The version byte found in the record.
        found: u8,
    },
    /// The body is not a valid postcard encoding of the expected record type.
    #[error("malformed record body: {0}")]
    Malformed(#[from] postcard::Error),
    /// A whole record was decoded but bytes were left over: the record is not what it claims.
    #[error("{count} trailing bytes after a complete record")]
    TrailingBytes {
        /// How many bytes were left over.
        count: usize,
    },
}

/// Appends `[FORMAT_VERSION][postcard(value)]` to `buf`.
pub(crate) fn encode_into<T: Serialize>(value: &T, buf: &mut Vec<u8>) {
    buf.push(FORMAT_VERSION);
    // Postcard fails only on a sequence of unknown length, a custom serializer error or an I/O
    // error. The record types are plain structs of integers, UUIDs and byte vectors, and writing
    // into a Vec cannot fail, so none of these can happen.
    postcard::to_io(value, &mut *buf).expect("postcard cannot fail on queue record types");
}

/// Decodes a record written by [`encode_into`], checking the version and that nothing is left over.
pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    let (&version, body) = bytes.split_first().ok_or(DecodeError::Empty)?;
    if version != FORMAT_VERSION {
        return Err(DecodeError::UnsupportedVersion { found: version });
    }
    let (value, rest) = postcard::take_from_bytes::<T>(body)?;
    if !rest.is_empty() {
        return Err(DecodeError::TrailingBytes { count: rest.len() });
    }
    Ok(value)
}
