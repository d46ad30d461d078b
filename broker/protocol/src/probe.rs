//! The hop probe: timestamps along a request's path through client and broker, for profiling
//! (`docs/experiments/claim-hops.md`). Off by default: without the `hop-probe` feature a
//! [`Stamp`] is a zero-sized value and every call here compiles to nothing, so the hot path
//! carries no clock reads, no lock and no memory.
//!
//! With the feature, [`Stamp::hop`] records the time since the stamp under a hop name into one
//! process-wide table (a mutex-guarded list of nanosecond samples per hop, at most
//! [`MAX_SAMPLES_PER_HOP`] each); [`take`] empties it and returns the samples. The broker and the
//! client share this crate, so an embedded broker and its clients (the load harness) fill one
//! table, on one clock.
//!
//! Why it lives in the codec crate: it is the one crate both sides depend on, and it needs
//! nothing but `std`.

/// Samples kept per hop; later ones are dropped (a probe run should be short).
pub const MAX_SAMPLES_PER_HOP: usize = 4_000_000;

/// A moment on the monotonic clock, or nothing without the `hop-probe` feature.
#[derive(Debug, Clone, Copy)]
pub struct Stamp {
    #[cfg(feature = "hop-probe")]
    at: std::time::Instant,
}

impl Stamp {
    /// Now.
    #[inline]
    pub fn now() -> Self {
        Self {
            #[cfg(feature = "hop-probe")]
            at: std::time::Instant::now(),
        }
    }

    /// Records the time from this stamp to now under `hop`, and returns now (to time the next
    /// hop from).
    #[inline]
    #[allow(unused_variables)]
    // `hop` is unused without the feature
    // Most callers time one hop and drop the stamp returned; only chains use it.
    #[allow(clippy::return_self_not_must_use)]
    pub fn hop(self, hop: &'static str) -> Self {
        let now = Self::now();
        #[cfg(feature = "hop-probe")]
        enabled::record(hop, now.at.saturating_duration_since(self.at));
        now
    }
}

/// True when the probe records (the `hop-probe` feature is on).
pub const ENABLED: bool = cfg!(feature = "hop-probe");

/// Empties the table: every hop's samples, in nanoseconds, sorted by hop name. Empty without
/// the feature.
pub fn take() -> Vec<(&'static str, Vec<u64>)> {
    #[cfg(feature = "hop-probe")]
    {
        enabled::take()
    }
    #[cfg(not(feature = "hop-probe"))]
    {
        Vec::new()
    }
}

#[cfg(feature = "hop-probe")]
mod enabled {
    use std::collections::BTreeMap;
    use std::sync::Mutex;
    use std::time::Duration;

    use super::MAX_SAMPLES_PER_HOP;

    static TABLE: Mutex<BTreeMap<&'static str, Vec<u64>>> = Mutex::new(BTreeMap::new());

    pub(super) fn record(hop: &'static str, elapsed: Duration) {
        let mut table = TABLE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let samples = table.entry(hop).or_default();
        if samples.len() < MAX_SAMPLES_PER_HOP {
            samples.push(elapsed.as_nanos() as u64);
        }
    }

    pub(super) fn take() -> Vec<(&'static str, Vec<u64>)> {
        std::mem::take(
            &mut *TABLE
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
        .into_iter()
        .collect()
    }
}

#[cfg(all(test, feature = "hop-probe"))]
mod tests {
    use super::*;

    #[test]
    fn a_hop_records_the_time_since_its_stamp() {
        let stamp = Stamp::now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        stamp.hop("test: two ms");
        let table = take();
        let (_, samples) = table
            .iter()
            .find(|(hop, _)| *hop == "test: two ms")
            .expect("the hop was recorded");
        assert_eq!(samples.len(), 1);
        assert!(samples[0] >= 2_000_000, "{samples:?}");
    }
}
