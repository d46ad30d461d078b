//! The poisoned state of a partition: after a failed fsync (or write) nobody knows what is on
//! disk, so the partition refuses every later append, loudly, with the first cause.
//!
//! Retrying an fsync after a failure is not an option: on Linux a failed writeback marks the
//! pages clean, so a second fsync can succeed without the data ever reaching the disk
//! ("fsyncgate"). The only honest answer is to stop accepting writes until an operator restarts
//! the broker, at which point recovery re-reads what the disk really has.

use std::sync::OnceLock;

use super::error::StorageError;

/// Set once, never cleared.
#[derive(Debug, Default)]
pub(crate) struct Poison {
    cause: OnceLock<String>,
}

impl Poison {
    /// Poisons with `error` as the cause; returns false when already poisoned.
    pub(crate) fn set(&self, error: &StorageError) -> bool {
        self.cause.set(error.to_string()).is_ok()
    }

    /// `Err(Poisoned)` with the first cause once poisoned.
    pub(crate) fn check(&self) -> Result<(), StorageError> {
        match self.cause.get() {
            Some(cause) => Err(StorageError::Poisoned {
                cause: cause.clone(),
            }),
            None => Ok(()),
        }
    }

    /// The first cause, once poisoned.
    pub(crate) fn cause(&self) -> Option<String> {
        self.cause.get().cloned()
    }

    /// True once poisoned.
    pub(crate) fn is_poisoned(&self) -> bool {
        self.cause.get().is_some()
    }
}
