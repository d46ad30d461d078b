//! Everything the storage can refuse or fail with.
//!
//! Refusals the protocol has a code for ([`StorageError::RecordTooLarge`],
//! [`StorageError::OffsetOutOfRange`]) are separate from failures of the log itself
//! ([`StorageError::Poisoned`], [`StorageError::Corrupt`], [`StorageError::Io`]): a server answers
//! the first kind and stops trusting the partition on the second. A refusal the protocol has no
//! code for ([`StorageError::OffsetOverflow`]: a log that reached the largest offset;
//! [`StorageError::NoSpace`]: a full disk or quota) leaves the partition as it was; a server can
//! only close the connection over it.

use std::path::PathBuf;

/// A storage refusal or failure.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// A record cannot fit even an empty segment (`size + 8 > segment capacity`). It is refused,
    /// never truncated.
    #[error("record of {size} bytes exceeds the largest record a segment can hold ({max} bytes)")]
    RecordTooLarge {
        /// Payload bytes of the largest record in the batch.
        size: usize,
        /// Largest payload a segment can hold.
        max: usize,
    },
    /// The batch's last record would get an offset past the largest one a log can hold: the high
    /// watermark (the offset after the last record) must still be an `int64`, so the last
    /// record's offset is at most `i64::MAX − 1`. The batch is refused whole; the log is fine.
    #[error(
        "appending {records} records at offset {high_watermark} would pass the largest offset ({})",
        i64::MAX
    )]
    OffsetOverflow {
        /// Offset the batch's first record would have got.
        high_watermark: i64,
        /// Records in the batch.
        records: usize,
    },
    /// A read asked for an offset outside `[log_start_offset, high_watermark]`.
    #[error(
        "offset {offset} is outside the log [{log_start_offset}, {high_watermark}] (start, high watermark)"
    )]
    OffsetOutOfRange {
        /// The offset asked for.
        offset: i64,
        /// First offset still in the log.
        log_start_offset: i64,
        /// Offset the next appended record will get.
        high_watermark: i64,
    },
    /// An fsync (or a write) failed earlier; the partition no longer knows what is on disk and
    /// refuses every append from then on.
    #[error("partition is poisoned and refuses appends: {cause}")]
    Poisoned {
        /// What failed first.
        cause: String,
    },
    /// Recovery found damage it will not repair silently: complete records after a corrupt one,
    /// or a broken segment that is not the last.
    #[error("corrupt log in {path} at byte {position}: {reason}")]
    Corrupt {
        /// The segment file.
        path: PathBuf,
        /// Byte position of the damage inside that file.
        position: u64,
        /// What is wrong.
        reason: String,
    },
    /// The filesystem had no room for the batch (`ENOSPC`, or `EDQUOT` for a quota) and nothing
    /// of it was written: the log is as it was before the batch, so this is a refusal and the
    /// partition takes the next append (which succeeds once space returns). Space running out
    /// after part of a batch was written is an [`StorageError::Io`] instead, which poisons.
    #[error("no space for the batch: {context}: {source}")]
    NoSpace {
        /// What was being done, with the path.
        context: String,
        /// The error from the operating system.
        #[source]
        source: std::io::Error,
    },
    /// An I/O call failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, with the path.
        context: String,
        /// The error from the operating system.
        #[source]
        source: std::io::Error,
    },
    /// The storage was closed.
    #[error("storage is closed")]
    Closed,
    /// Another `Storage` (in this or another process) holds the data directory's lock.
    #[error("data directory {path} is in use by another broker (lock file held)")]
    DataDirLocked {
        /// The lock file.
        path: PathBuf,
    },
    /// A setting breaks a limit.
    #[error("invalid storage configuration: {reason}")]
    InvalidConfig {
        /// Which setting and why.
        reason: String,
    },
}

impl StorageError {
    /// True for a refusal of one request ([`StorageError::RecordTooLarge`],
    /// [`StorageError::OffsetOverflow`], [`StorageError::NoSpace`]), which leaves the log as it
    /// was; false for a failure that must poison the partition.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            StorageError::RecordTooLarge { .. }
                | StorageError::OffsetOverflow { .. }
                | StorageError::OffsetOutOfRange { .. }
                | StorageError::NoSpace { .. }
        )
    }

    /// `NoSpace` for an error saying the filesystem is full (`ENOSPC`) or a quota is used up
    /// (`EDQUOT`), `Io` for any other. Only for calls that leave the log as it was when they
    /// fail; the caller decides whether the batch as a whole still can be refused.
    pub(crate) fn io_or_no_space(context: impl Into<String>, source: std::io::Error) -> Self {
        if is_no_space(&source) {
            StorageError::NoSpace {
                context: context.into(),
                source,
            }
        } else {
            StorageError::io(context, source)
        }
    }

    /// Wraps an I/O error with what was being done.
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        StorageError::Io {
            context: context.into(),
            source,
        }
    }
}

/// True for "no space left on device" and "disk quota exceeded".
pub(crate) fn is_no_space(error: &std::io::Error) -> bool {
    error.raw_os_error().is_some_and(|code| {
        code == rustix::io::Errno::NOSPC.raw_os_error()
            || code == rustix::io::Errno::DQUOT.raw_os_error()
    })
}

/// Adds context to `io::Result`s at the call site: `file.sync_data().context(|| ...)`.
pub(crate) trait IoContext<T> {
    fn context<C: Into<String>>(self, context: impl FnOnce() -> C) -> Result<T, StorageError>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn context<C: Into<String>>(self, context: impl FnOnce() -> C) -> Result<T, StorageError> {
        self.map_err(|source| StorageError::io(context(), source))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_or_quota_is_a_refusal_and_other_io_errors_are_not() {
        for errno in [rustix::io::Errno::NOSPC, rustix::io::Errno::DQUOT] {
            let error = StorageError::io_or_no_space("writing x", errno.into());
            assert!(matches!(error, StorageError::NoSpace { .. }), "{error}");
            assert!(error.is_refusal());
        }
        let error = StorageError::io_or_no_space("writing x", rustix::io::Errno::IO.into());
        assert!(matches!(error, StorageError::Io { .. }), "{error}");
        assert!(!error.is_refusal());
    }
}
