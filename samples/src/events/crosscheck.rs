//! Cross-checks: a replay of the log is the reference for what every other reader should have seen.
//!
//! The log is the single source of truth, and replaying it is cheap, so any reader's result can be
//! checked after the fact: replay the same offsets and compare. The demo runs these at the end of
//! every run; they are also what a test or an operator would run to audit a consumer.
//!
//! * [`follow_matches_replay`]: the follow consumer handled exactly the records of the range it
//!   covered — same count, same events per user — with per-user order kept.
//! * [`projection_matches_replay`]: the read model equals a fold of the log up to its positions.
//! * [`log_grew_by_published`]: the log grew by exactly what the publisher had acknowledged.

use std::collections::BTreeMap;

use booblik_client::{Client, ClientError, ConsumerConfig, StartPosition};

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
    client: &Client,
    topic: &str,
    progress: &PartitionProgress,
) -> Result<Check, ClientError> {
    let tally = &progress.tally;
    let partition = tally.partition;
    let (Some(first), Some(next)) = (tally.first_offset, tally.next_offset) else {
        return Ok(Check::new(
            true,
            format!("follow p{partition} handled nothing in this run (nothing to compare)"),
        ));
    };
    let range = ReplayRange {
        from: StartPosition::At(first),
        to: Some(next),
    };
    let replayed =
        replay_partition(client, topic, partition, range, ConsumerConfig::default()).await?;
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
    client: &Client,
    topic: &str,
    projection: &Projection,
) -> Result<Check, ClientError> {
    let mut reference: BTreeMap<String, u64> = BTreeMap::new();
    let mut violations = 0;
    for (&partition, &position) in &projection.positions() {
        let range = ReplayRange {
            from: StartPosition::Earliest,
            to: Some(position),
        };
        let replayed =
            replay_partition(client, topic, partition, range, ConsumerConfig::default()).await?;
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

/// Compares per-partition log growth (`after − before`, high watermarks) with what the publisher
/// had acknowledged. Holds only when nobody else writes to the topic.
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
    let passed = growth == published_per_partition && published.failed == 0;
    Check::new(
        passed,
        format!(
            "publisher: {} acknowledged, {} failed; the log grew {} (acknowledged: {})",
            published.sent,
            published.failed,
            describe(&growth),
            describe(&published_per_partition)
        ),
    )
}
