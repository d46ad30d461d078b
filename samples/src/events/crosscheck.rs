//! Cross-checks: a replay of the log is the reference for what every other reader should have seen.
//!
//! The log is the single source of truth, and replaying it is cheap, so any reader's result can be
//! checked after the fact: replay the same offsets and compare. The demo runs these at the end of
//! every run; they are also what a test or an operator would run to audit a consumer.
//!
//! * [`follow_matches_replay`]: the follow consumer handled exactly the records of the range it
//!   covered — same count, same events per user — with per-user order kept.
//! * [`projection_matches_replay`]: the read model equals a fold of the log up to its positions.
//! * [`log_grew_by_published`]: the log grew by what the publisher had acknowledged, plus at most
//!   its failed deliveries (whose outcome is unknown).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::engine::{EngineError, LogEngine, ReadLimits, StartAt};

use crate::events::follow::PartitionProgress;
use crate::events::projection::Projection;
use crate::events::publisher::PublisherSnapshot;
use crate::events::replay::{ReplayRange, replay_partition};

/// The outcome of one cross-check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// True when the invariant held.
    pub passed: bool,
    /// What was checked and what was found, one line for people.
    pub detail: String,
}

impl Check {
    fn new(passed: bool, detail: String) -> Self {
        Self { passed, detail }
    }
}

/// Replays `[first_offset, next_offset)` of the follow consumer's partition and compares.
pub async fn follow_matches_replay(
    engine: &dyn LogEngine,
    topic: &str,
    progress: &PartitionProgress,
) -> Result<Check, EngineError> {
    let tally = &progress.tally;
    let partition = tally.partition;
    let (Some(first), Some(next)) = (tally.first_offset, tally.next_offset) else {
        return Ok(Check::new(
            true,
            format!("follow p{partition} handled nothing in this run (nothing to compare)"),
        ));
    };
    let range = ReplayRange {
        from: StartAt::At(first),
        to: Some(next),
    };
    let replayed = replay_partition(engine, topic, partition, range, ReadLimits::default()).await?;
    let reference = &replayed.tally;
    let mut problems = Vec::new();
    if tally.records != reference.records {
        problems.push(format!(
            "follow handled {} records, the replay read {}",
            tally.records, reference.records
        ));
    }
    if tally.per_user != reference.per_user {
        problems.push("events per user differ".to_owned());
    }
    if tally.violations() + reference.violations() > 0 {
        problems.push(format!(
            "{} order violations/skipped offsets in follow, {} in the replay",
            tally.violations(),
            reference.violations()
        ));
    }
    let summary = format!(
        "follow p{partition} offsets {first}..{next}: {} records, {} users, {} duplicates",
        tally.records,
        tally.per_user.len(),
        tally.duplicates
    );
    Ok(if problems.is_empty() {
        Check::new(
            true,
            format!("{summary} = replay of the same offsets, order kept"),
        )
    } else {
        Check::new(false, format!("{summary}: {}", problems.join("; ")))
    })
}

/// Replays every partition up to the projection's position and compares events per user.
pub async fn projection_matches_replay(
    engine: &dyn LogEngine,
    topic: &str,
    projection: &Projection,
) -> Result<Check, EngineError> {
    let mut reference: BTreeMap<String, u64> = BTreeMap::new();
    let mut violations = 0;
    for (&partition, &position) in &projection.positions() {
        let range = ReplayRange {
            from: StartAt::Earliest,
            to: Some(position),
        };
        let replayed =
            replay_partition(engine, topic, partition, range, ReadLimits::default()).await?;
        violations += replayed.tally.violations();
        for (user, count) in replayed.tally.per_user {
            *reference.entry(user).or_insert(0) += count;
        }
    }
    let folded = projection.events_per_user();
    let summary = format!(
        "projection: {} events, {} users",
        projection.events(),
        folded.len()
    );
    Ok(if folded == reference && violations == 0 {
        Check::new(
            true,
            format!("{summary} = a fold of the replayed log up to its positions"),
        )
    } else {
        Check::new(
            false,
            format!(
                "{summary}, but a fold of the replayed log has {} events, {} users \
                 ({violations} violations)",
                reference.values().sum::<u64>(),
                reference.len()
            ),
        )
    })
}

/// Compares per-partition log growth (`after − before`, the partitions' ends) with what the publisher
/// had acknowledged. Holds only when nobody else writes to the topic. Give `before` every
/// partition of `after` (the demo measures both with the engine's bounds): a partition missing
/// from it is counted from 0, booblik's origin.
///
/// A failed delivery's outcome is unknown — the broker may have written the record and lost only
/// the acknowledgement — so a partition may have grown by anything from its acknowledged count to
/// acknowledged + failed. The check accepts that range and says how many failed deliveries were
/// written after all.
pub fn log_grew_by_published(
    before: &BTreeMap<i32, i64>,
    after: &BTreeMap<i32, i64>,
    published: &PublisherSnapshot,
) -> Check {
    let growth: BTreeMap<i32, u64> = after
        .iter()
        .map(|(&p, &hw)| (p, (hw - before.get(&p).copied().unwrap_or(0)) as u64))
        .filter(|&(_, grew)| grew > 0)
        .collect();
    let published_per_partition: BTreeMap<i32, u64> = published
        .per_partition
        .iter()
        .filter(|&(_, &n)| n > 0)
        .map(|(&p, &n)| (p, n))
        .collect();
    let describe = |counts: &BTreeMap<i32, u64>| {
        counts
            .iter()
            .map(|(p, n)| format!("p{p} +{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let partitions: BTreeSet<i32> = growth
        .keys()
        .chain(published_per_partition.keys())
        .chain(published.failed_per_partition.keys())
        .copied()
        .collect();
    let mut passed = true;
    let mut written_after_failing = 0;
    for partition in partitions {
        let grew = growth.get(&partition).copied().unwrap_or(0);
        let acknowledged = published_per_partition
            .get(&partition)
            .copied()
            .unwrap_or(0);
        let failed = published
            .failed_per_partition
            .get(&partition)
            .copied()
            .unwrap_or(0);
        if (acknowledged..=acknowledged + failed).contains(&grew) {
            written_after_failing += grew - acknowledged;
        } else {
            passed = false;
        }
    }
    let mut detail = format!(
        "publisher: {} acknowledged, {} failed; the log grew {} (acknowledged: {})",
        published.sent,
        published.failed,
        describe(&growth),
        describe(&published_per_partition)
    );
    if published.failed > 0 {
        let _ = write!(
            detail,
            "; {written_after_failing} of the {} failed deliveries were written after all",
            published.failed
        );
    }
    Check::new(passed, detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn published(acknowledged: u64, failed: u64) -> PublisherSnapshot {
        PublisherSnapshot {
            sent: acknowledged,
            failed,
            per_partition: BTreeMap::from([(0, acknowledged)]),
            failed_per_partition: if failed > 0 {
                BTreeMap::from([(0, failed)])
            } else {
                BTreeMap::new()
            },
            ..PublisherSnapshot::default()
        }
    }

    fn grew(by: i64) -> (BTreeMap<i32, i64>, BTreeMap<i32, i64>) {
        (BTreeMap::from([(0, 100)]), BTreeMap::from([(0, 100 + by)]))
    }

    #[test]
    fn failed_deliveries_may_or_may_not_be_in_the_log() {
        for written in 0..=2 {
            let (before, after) = grew(10 + written);
            let check = log_grew_by_published(&before, &after, &published(10, 2));
            assert!(check.passed, "{}", check.detail);
            assert!(
                check.detail.contains(&format!(
                    "{written} of the 2 failed deliveries were written"
                )),
                "{}",
                check.detail
            );
        }
    }

    #[test]
    fn growth_outside_acknowledged_to_acknowledged_plus_failed_fails() {
        for by in [9, 13] {
            let (before, after) = grew(by);
            assert!(!log_grew_by_published(&before, &after, &published(10, 2)).passed);
        }
        let (before, after) = grew(10);
        assert!(log_grew_by_published(&before, &after, &published(10, 0)).passed);
    }
}
