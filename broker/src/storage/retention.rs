//! Which old segments to drop: by the partition's total size and by age.
//!
//! Retention only ever removes a *prefix* of the sealed segments — whole files, oldest first —
//! so the log stays gap-free and `logStartOffset` simply moves to the first remaining segment.
//! The active segment is never dropped, however old or large: it is where the next offset goes.
//!
//! * **Size**: while the partition (sealed segments + the active one) holds more than
//!   `retention_bytes`, drop the oldest sealed segment.
//! * **Age**: drop sealed segments whose last write (the file's modification time) is more than
//!   `retention_ms` ago, oldest first, stopping at the first one that is young enough.
//!
//! A segment matching either rule is dropped. This file is only the decision; the writer renames
//! the files and updates the segment list (see `log.rs`).

use std::time::{Duration, SystemTime};

/// The retention settings of a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct RetentionPolicy {
    pub(crate) retention_bytes: Option<u64>,
    pub(crate) retention_ms: Option<u64>,
}

impl RetentionPolicy {
    /// True when neither rule is set.
    pub(crate) fn is_disabled(&self) -> bool {
        self.retention_bytes.is_none() && self.retention_ms.is_none()
    }
}

/// What retention needs to know about one sealed segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SealedSegmentFacts {
    /// Bytes of records in the segment.
    pub(crate) size_bytes: u64,
    /// When the segment was last written.
    pub(crate) last_modified: SystemTime,
}

/// How many of the oldest `sealed` segments (oldest first) to drop, given the active segment's
/// size and the current time.
pub(crate) fn segments_to_drop(
    policy: RetentionPolicy,
    sealed: &[SealedSegmentFacts],
    active_bytes: u64,
    now: SystemTime,
) -> usize {
    let by_size = policy.retention_bytes.map_or(0, |limit| {
        let mut total: u64 = sealed.iter().map(|s| s.size_bytes).sum::<u64>() + active_bytes;
        sealed
            .iter()
            .take_while(|segment| {
                let over = total > limit;
                total -= segment.size_bytes;
                over
            })
            .count()
    });
    let by_age = policy.retention_ms.map_or(0, |limit_ms| {
        let limit = Duration::from_millis(limit_ms);
        sealed
            .iter()
            .take_while(|segment| {
                // A modification time in the future (clock change) is "not old".
                now.duration_since(segment.last_modified)
                    .is_ok_and(|age| age > limit)
            })
            .count()
    });
    by_size.max(by_age)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealed(sizes_and_ages_s: &[(u64, u64)], now: SystemTime) -> Vec<SealedSegmentFacts> {
        sizes_and_ages_s
            .iter()
            .map(|&(size_bytes, age_s)| SealedSegmentFacts {
                size_bytes,
                last_modified: now - Duration::from_secs(age_s),
            })
            .collect()
    }

    #[test]
    fn size_retention_drops_the_oldest_until_the_log_fits() {
        let now = SystemTime::now();
        let segments = sealed(&[(100, 0), (100, 0), (100, 0)], now);
        let policy = RetentionPolicy {
            retention_bytes: Some(250),
            retention_ms: None,
        };
        // 300 + 50 = 350 > 250 → drop one (250, not over) → stop.
        assert_eq!(segments_to_drop(policy, &segments, 50, now), 1);
        let policy = RetentionPolicy {
            retention_bytes: Some(1),
            retention_ms: None,
        };
        assert_eq!(segments_to_drop(policy, &segments, 50, now), 3);
        let policy = RetentionPolicy {
            retention_bytes: Some(10_000),
            retention_ms: None,
        };
        assert_eq!(segments_to_drop(policy, &segments, 50, now), 0);
    }

    #[test]
    fn age_retention_drops_only_a_prefix_of_old_segments() {
        let now = SystemTime::now();
        let segments = sealed(&[(1, 3600), (1, 10), (1, 3600)], now);
        let policy = RetentionPolicy {
            retention_bytes: None,
            retention_ms: Some(60_000),
        };
        assert_eq!(segments_to_drop(policy, &segments, 0, now), 1);
    }

    #[test]
    fn no_policy_drops_nothing() {
        let now = SystemTime::now();
        let segments = sealed(&[(1 << 40, 1 << 30)], now);
        assert_eq!(
            segments_to_drop(RetentionPolicy::default(), &segments, 0, now),
            0
        );
    }
}
