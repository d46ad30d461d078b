//! Correlation ids: unique under concurrency.
//!
//! Many tasks submit on one connection at once, so the id comes from an atomic counter, never
//! from a read-then-write: the Kotlin client once gave two concurrent calls the same id, and the
//! answer went to the wrong caller. Zero is skipped because a broker answers a frame too short to
//! carry an id with correlationId 0; an id of 0 on our side could be confused with that.

use std::sync::atomic::{AtomicI32, Ordering};

/// Hands out correlation ids for one connection.
#[derive(Debug)]
pub(crate) struct CorrelationIds {
    next: AtomicI32,
}

impl CorrelationIds {
    pub(crate) fn new() -> Self {
        Self {
            next: AtomicI32::new(1),
        }
    }

    /// The next id. Wraps around after `i32::MAX` (2³² ids later, long after any request that
    /// used the old value was answered); never returns 0.
    pub(crate) fn next(&self) -> i32 {
        loop {
            // `fetch_add` on atomics wraps on overflow.
            let id = self.next.fetch_add(1, Ordering::Relaxed);
            if id != 0 {
                return id;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::Arc;

    #[test]
    fn ids_are_unique_across_threads() {
        let ids = Arc::new(CorrelationIds::new());
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let ids = Arc::clone(&ids);
                std::thread::spawn(move || (0..1000).map(|_| ids.next()).collect::<Vec<_>>())
            })
            .collect();
        let mut seen = HashSet::new();
        for t in threads {
            for id in t.join().unwrap() {
                assert!(seen.insert(id), "id {id} was handed out twice");
            }
        }
        assert_eq!(seen.len(), 8000);
    }

    #[test]
    fn zero_is_skipped_when_the_counter_wraps() {
        let ids = CorrelationIds {
            next: AtomicI32::new(-1),
        };
        assert_eq!(ids.next(), -1);
        assert_eq!(ids.next(), 1);
    }
}
