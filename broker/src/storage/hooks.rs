//! Test seams: ways for tests to make the real writer do something rare on demand.
//!
//! An fsync failure cannot be provoked portably on a healthy disk (it needs a failing device or
//! a fault-injecting device-mapper target), yet "an fsync failure poisons the partition" must be
//! tested. Every fsync and fdatasync the storage issues goes through
//! [`Durability`](super::durability::Durability), which asks these hooks first. Likewise "all
//! FORCED waiters present at the same time share one fsync" needs the waiters to *be* present at
//! the same time, which a test can only guarantee by holding the writer for a moment.
//!
//! The hooks are public (integration tests are another crate) but hidden from the docs; nothing
//! in the broker arms them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

/// Failure injection and pausing for tests. See the module docs.
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct TestHooks {
    fail_next_fsync: AtomicBool,
    fail_next_directory_fsync: AtomicBool,
    /// True while a test holds the writer.
    writer_paused: Mutex<bool>,
    writer_resumed: Condvar,
    /// Cold FETCH reads: whether a test holds them, and how many wait at the gate.
    cold_reads: Mutex<ColdReadGate>,
    cold_reads_resumed: Condvar,
}

#[derive(Debug, Default)]
struct ColdReadGate {
    held: bool,
    waiting: usize,
}

impl TestHooks {
    /// Makes the next fsync (or fdatasync) issued by this partition fail with an I/O error.
    pub fn fail_next_fsync(&self) {
        self.fail_next_fsync.store(true, Ordering::SeqCst);
    }

    /// Makes the next *directory* fsync issued by this partition fail with an I/O error, leaving
    /// file fsyncs alone: a test can then tell that a directory fsync happened where it must
    /// (after a segment roll), which failing "the next fsync" cannot, as a data fsync may come
    /// first or instead.
    pub fn fail_next_directory_fsync(&self) {
        self.fail_next_directory_fsync.store(true, Ordering::SeqCst);
    }

    /// Holds the partition's writer before it drains its queue, for as long as the returned
    /// guard lives: commands queue up meanwhile and are then handled as one group.
    pub fn pause_writer(&self) -> WriterPause<'_> {
        *self.paused() = true;
        WriterPause { hooks: self }
    }

    /// Holds every FETCH read the server sends to the blocking pool because its bytes are not
    /// in the page cache (a cold read), for as long as the returned guard lives: a test can
    /// then show that a slow disk read holds up no other session.
    pub fn hold_cold_reads(&self) -> ColdReadHold<'_> {
        self.cold_read_gate().held = true;
        ColdReadHold { hooks: self }
    }

    /// How many cold reads wait at the gate of [`TestHooks::hold_cold_reads`] now.
    pub fn cold_reads_held(&self) -> usize {
        self.cold_read_gate().waiting
    }

    /// Called by a cold read on its blocking thread before it reads: waits while a test holds
    /// cold reads.
    pub fn pass_cold_read_gate(&self) {
        let mut gate = self.cold_read_gate();
        gate.waiting += 1;
        while gate.held {
            gate = self
                .cold_reads_resumed
                .wait(gate)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        gate.waiting -= 1;
    }

    fn cold_read_gate(&self) -> std::sync::MutexGuard<'_, ColdReadGate> {
        self.cold_reads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Returns the injected failure, once, if one is armed.
    pub(crate) fn take_fsync_failure(&self) -> Option<std::io::Error> {
        self.fail_next_fsync
            .swap(false, Ordering::SeqCst)
            .then(|| std::io::Error::other("injected fsync failure (test hook)"))
    }

    /// Returns the injected directory fsync failure, once, if one is armed.
    pub(crate) fn take_directory_fsync_failure(&self) -> Option<std::io::Error> {
        self.fail_next_directory_fsync
            .swap(false, Ordering::SeqCst)
            .then(|| std::io::Error::other("injected directory fsync failure (test hook)"))
    }

    /// Called by the writer before it drains its queue: waits while a test holds it.
    pub(crate) fn pass_writer_gate(&self) {
        let mut paused = self.paused();
        while *paused {
            paused = self
                .writer_resumed
                .wait(paused)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    fn paused(&self) -> std::sync::MutexGuard<'_, bool> {
        self.writer_paused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Keeps a partition's writer paused until dropped; see [`TestHooks::pause_writer`].
#[doc(hidden)]
#[derive(Debug)]
#[must_use = "the writer resumes when the guard is dropped"]
pub struct WriterPause<'a> {
    hooks: &'a TestHooks,
}

impl Drop for WriterPause<'_> {
    fn drop(&mut self) {
        *self.hooks.paused() = false;
        self.hooks.writer_resumed.notify_all();
    }
}

/// Holds cold FETCH reads until dropped; see [`TestHooks::hold_cold_reads`].
#[doc(hidden)]
#[derive(Debug)]
#[must_use = "cold reads are released when the guard is dropped"]
pub struct ColdReadHold<'a> {
    hooks: &'a TestHooks,
}

impl Drop for ColdReadHold<'_> {
    fn drop(&mut self) {
        self.hooks.cold_read_gate().held = false;
        self.hooks.cold_reads_resumed.notify_all();
    }
}
