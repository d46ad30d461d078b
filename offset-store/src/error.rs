//! Everything that can go wrong when loading or saving a position.
//!
//! The rule for this crate: when the store cannot say for certain what the saved position is,
//! it returns an error, never a guess. A missing file is the only "nothing saved" (`Ok(None)`);
//! an unreadable, truncated or corrupt one is [`OffsetStoreError::Corrupt`] and names the file,
//! so an operator can look at it and decide.

use std::io;
use std::path::PathBuf;

use crate::format::FormatError;
use crate::key::OffsetKey;
use crate::name_encoding::MAX_ENCODED_NAME_BYTES;

/// Why a (consumer, topic, partition) triple is not a valid key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyProblem {
    /// The consumer name is empty.
    #[error("the consumer name is empty")]
    EmptyConsumer,
    /// The topic name is empty.
    #[error("the topic name is empty")]
    EmptyTopic,
    /// Partitions are numbered from 0.
    #[error("the partition is negative")]
    NegativePartition,
    /// The consumer name is too long once escaped for the file system.
    #[error(
        "the consumer name is {encoded_bytes} bytes once escaped, more than {MAX_ENCODED_NAME_BYTES}"
    )]
    ConsumerTooLong {
        /// Length of the escaped name.
        encoded_bytes: usize,
    },
    /// The topic name is too long once escaped for the file system.
    #[error(
        "the topic name is {encoded_bytes} bytes once escaped, more than {MAX_ENCODED_NAME_BYTES}"
    )]
    TopicTooLong {
        /// Length of the escaped name.
        encoded_bytes: usize,
    },
}

/// A file-system step, named in [`OffsetStoreError::Io`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoStep {
    /// Creating a directory.
    CreateDirectory,
    /// Listing a directory.
    ListDirectory,
    /// Reading an offset file.
    Read,
    /// Writing the temporary file of a save.
    WriteTemp,
    /// fsync of the temporary file.
    SyncTemp,
    /// Renaming the temporary file over the offset file.
    Rename,
    /// fsync of a directory, making a rename or a new entry durable.
    SyncDirectory,
}

impl std::fmt::Display for IoStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::CreateDirectory => "create directory",
            Self::ListDirectory => "list directory",
            Self::Read => "read",
            Self::WriteTemp => "write temporary file",
            Self::SyncTemp => "fsync temporary file",
            Self::Rename => "rename temporary file over",
            Self::SyncDirectory => "fsync directory",
        })
    }
}

/// The error of every [`OffsetStore`](crate::OffsetStore) operation.
#[derive(Debug, thiserror::Error)]
pub enum OffsetStoreError {
    /// The key was refused before anything was read or written.
    #[error(
        "invalid offset key (consumer {consumer:?}, topic {topic:?}, partition {partition}): {problem}"
    )]
    InvalidKey {
        /// The consumer name, as given.
        consumer: String,
        /// The topic name, as given.
        topic: String,
        /// The partition, as given.
        partition: i32,
        /// What is wrong with it.
        problem: KeyProblem,
    },
    /// Offsets are positions in a log and start at 0.
    #[error("refusing to save negative offset {offset} for {key}")]
    NegativeOffset {
        /// The key the save was for.
        key: OffsetKey,
        /// The refused offset.
        offset: i64,
    },
    /// The offset file exists but does not hold a valid position. Nothing is guessed: look at
    /// the file, then delete it (the consumer starts from its configured start position) or
    /// restore it.
    #[error("offset file {} is corrupt: {problem}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with its bytes.
        problem: FormatError,
    },
    /// A file-system call failed.
    #[error("could not {step} {}: {source}", path.display())]
    Io {
        /// What the store was doing.
        step: IoStep,
        /// The file or directory it was doing it to.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// The blocking file work panicked or was cancelled by a runtime shutdown.
    #[error("the blocking offset-file task failed: {0}")]
    BlockingTask(#[from] tokio::task::JoinError),
}

impl OffsetStoreError {
    /// An [`OffsetStoreError::Io`] for `step` on `path`.
    pub(crate) fn io(step: IoStep, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            step,
            path: path.into(),
            source,
        }
    }
}
