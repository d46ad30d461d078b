//! What a relay did: counters per partition, shared by the partition tasks, `GET /stats` and
//! the JSON summary printed on exit.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Instant;

use serde::Serialize;

/// One partition's counters, updated by its task.
#[derive(Debug, Default)]
pub struct PartitionCounters {
    /// Records written to the target and acknowledged by it, this run.
    pub relayed: AtomicU64,
    /// Records counted as possibly written twice (found at start, or reported by the target).
    pub duplicates: AtomicU64,
    /// Duplicates counted by earlier runs and kept by the target side (booblik's intent).
    pub duplicates_before: AtomicU64,
    /// Where this run started reading.
    pub started_at: AtomicI64,
    /// The source position saved last.
    pub position: AtomicI64,
    /// The source end seen at start (what `--exit-when-caught-up` relays up to).
    pub end_at_start: AtomicI64,
}

/// Every partition's counters.
#[derive(Debug)]
pub struct Counters {
    started: Instant,
    /// By partition.
    pub partitions: Vec<Arc<PartitionCounters>>,
}

/// One partition in the summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PartitionSummary {
    /// The partition (the same number on both sides).
    pub partition: i32,
    /// Records relayed this run.
    pub relayed: u64,
    /// Records counted as possibly duplicated in the target this run.
    pub duplicates: u64,
    /// Duplicates counted on this partition by every run so far, where the target side keeps
    /// that total durably (into booblik); otherwise this run's.
    pub duplicates_total: u64,
    /// The source offset this run started at.
    pub started_at: i64,
    /// The source position saved last.
    pub position: i64,
    /// The source end seen at start.
    pub end_at_start: i64,
}

/// The JSON summary printed on exit.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Summary {
    /// Records relayed this run, over every partition.
    pub relayed: u64,
    /// Duplicates counted this run, over every partition.
    pub duplicates: u64,
    /// Duplicates counted by every run so far, over every partition (see
    /// [`PartitionSummary::duplicates_total`]).
    pub duplicates_total: u64,
    /// Wall time of the run.
    pub elapsed_ms: u64,
    /// `relayed` over `elapsed_ms`.
    pub records_per_s: f64,
    /// By partition.
    pub partitions: Vec<PartitionSummary>,
}

impl Counters {
    /// Counters for `partitions` partitions, the clock starting now.
    pub fn new(partitions: i32) -> Self {
        Self {
            started: Instant::now(),
            partitions: (0..partitions).map(|_| Arc::default()).collect(),
        }
    }

    /// A snapshot.
    pub fn summary(&self) -> Summary {
        let partitions: Vec<PartitionSummary> = self
            .partitions
            .iter()
            .enumerate()
            .map(|(p, c)| PartitionSummary {
                partition: p as i32,
                relayed: c.relayed.load(Ordering::Relaxed),
                duplicates: c.duplicates.load(Ordering::Relaxed),
                duplicates_total: c.duplicates_before.load(Ordering::Relaxed)
                    + c.duplicates.load(Ordering::Relaxed),
                started_at: c.started_at.load(Ordering::Relaxed),
                position: c.position.load(Ordering::Relaxed),
                end_at_start: c.end_at_start.load(Ordering::Relaxed),
            })
            .collect();
        let relayed = partitions.iter().map(|p| p.relayed).sum();
        let elapsed = self.started.elapsed();
        Summary {
            relayed,
            duplicates: partitions.iter().map(|p| p.duplicates).sum(),
            duplicates_total: partitions.iter().map(|p| p.duplicates_total).sum(),
            elapsed_ms: elapsed.as_millis() as u64,
            records_per_s: relayed as f64 / elapsed.as_secs_f64().max(1e-9),
            partitions,
        }
    }
}
