//! The one test seam outside the storage's I/O: a gate on the server's cold FETCH reads.
//!
//! Everything the write and recovery path does to files goes through
//! [`StorageIo`](super::StorageIo), whose simulated implementation (`storage::test_io`) injects
//! fsync failures, a full disk, stalls and power losses. A cold FETCH read is issued by the
//! server on tokio's blocking pool, and "a slow disk read holds up no other session" needs that
//! read held on demand; the server calls [`TestHooks::pass_cold_read_gate`] before each one.
//!
//! Without the `test-io` cargo feature (every release build) `TestHooks` is empty and the gate
//! compiles to nothing: no mutex, no branch.

/// Test seams of one partition. See the module docs.
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct TestHooks {
    #[cfg(feature = "test-io")]
    gate: gate::ColdReadGate,
}

impl TestHooks {
    /// Called by a cold read on its blocking thread before it reads: with the `test-io` feature,
    /// waits while a test holds cold reads; otherwise nothing.
    #[inline]
    pub fn pass_cold_read_gate(&self) {
        #[cfg(feature = "test-io")]
        self.gate.pass();
    }

    /// Holds every FETCH read the server sends to the blocking pool because its bytes are not
    /// in the page cache (a cold read), for as long as the returned guard lives: a test can
    /// then show that a slow disk read holds up no other session.
    #[cfg(feature = "test-io")]
    pub fn hold_cold_reads(&self) -> gate::ColdReadHold<'_> {
        self.gate.hold()
    }

    /// How many cold reads wait at the gate of [`TestHooks::hold_cold_reads`] now.
    #[cfg(feature = "test-io")]
    pub fn cold_reads_held(&self) -> usize {
        self.gate.waiting()
    }
}

#[cfg(feature = "test-io")]
pub(crate) mod gate {
    use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

    #[derive(Debug, Default)]
    pub(crate) struct ColdReadGate {
        state: Mutex<State>,
        resumed: Condvar,
    }

    #[derive(Debug, Default)]
    struct State {
        held: bool,
        waiting: usize,
    }

    impl ColdReadGate {
        fn state(&self) -> MutexGuard<'_, State> {
            self.state.lock().unwrap_or_else(PoisonError::into_inner)
        }

        pub(super) fn pass(&self) {
            let mut state = self.state();
            state.waiting += 1;
            while state.held {
                state = self
                    .resumed
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            state.waiting -= 1;
        }

        pub(super) fn hold(&self) -> ColdReadHold<'_> {
            self.state().held = true;
            ColdReadHold { gate: self }
        }

        pub(super) fn waiting(&self) -> usize {
            self.state().waiting
        }
    }

    /// Holds cold FETCH reads until dropped; see `TestHooks::hold_cold_reads`.
    #[derive(Debug)]
    #[must_use = "cold reads are released when the guard is dropped"]
    pub struct ColdReadHold<'a> {
        gate: &'a ColdReadGate,
    }

    impl Drop for ColdReadHold<'_> {
        fn drop(&mut self) {
            self.gate.state().held = false;
            self.gate.resumed.notify_all();
        }
    }
}
