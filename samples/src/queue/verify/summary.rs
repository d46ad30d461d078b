//! The verifier's numbers: what happened to the tasks and how much work was lost on the way.

use serde::{Deserialize, Serialize};

/// Totals over a pair of logs, computed by the verifier from the trace of verdicts (not from the
/// state machine's own counters, which it cross-checks).
///
/// The outcome fields partition the submitted tasks:
/// `completed + dead_lettered + in_flight + pending + lost == tasks`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    // --- the tasks log ---
    /// Distinct tasks in the `tasks` log.
    pub tasks: u64,
    /// Task records repeating an id already seen (ignored).
    pub duplicate_tasks: u64,

    // --- outcome per submitted task, as of `VerifyConfig::as_of_ms` ---
    /// Tasks with an accepted done.
    pub completed: u64,
    /// Tasks moved to the dead-letter state.
    pub dead_lettered: u64,
    /// Unfinished tasks under a lease that is live at `as_of_ms`.
    pub in_flight: u64,
    /// Unfinished, not leased, idle for less than `lost_after_ms`: waiting to be (re)claimed.
    pub pending: u64,
    /// Unfinished, not leased, idle for `lost_after_ms` or more. Each is also a
    /// [`Violation::TaskLost`](super::Violation::TaskLost).
    pub lost: u64,
    /// Tasks without an accepted done: `tasks − completed` (dead-lettered ones included).
    pub never_completed: u64,

    // --- the claims log (all records, including those for unknown tasks) ---
    /// Claim records.
    pub claims: u64,
    /// Claims that won a lease.
    pub wins: u64,
    /// Claims that lost (to a live lease, a finished task or a dead task).
    pub lost_races: u64,
    /// Leases that lapsed and were superseded by a later claim.
    pub expired_leases: u64,
    /// Extends that renewed a lease.
    pub extends: u64,
    /// Extends that had no effect.
    pub void_extends: u64,
    /// Dones accepted.
    pub dones_accepted: u64,
    /// Dones refused by fencing: results that do not count.
    pub fenced_dones: u64,
    /// Repeats of an accepted done by the same holder.
    pub repeated_dones: u64,
    /// Releases that handed a lease back (a clean shutdown of its holder).
    #[serde(default)]
    pub releases: u64,
    /// Releases that had no effect.
    #[serde(default)]
    pub void_releases: u64,
    /// Heartbeats of idle workers (about no task).
    #[serde(default)]
    pub heartbeats: u64,
    /// Claims naming a task absent from the `tasks` log.
    pub unknown_task_claims: u64,
    /// Records of either log that did not decode (only [`verify_encoded`](super::verify_encoded)
    /// sees these).
    pub undecodable_records: u64,

    // --- lost work ---
    /// Re-executions: winning claims beyond the first, per task. Each one means the previous
    /// holder's lease expired without an accepted done, so the task was granted again. It is an
    /// upper bound on work done twice: the previous holder may have died before starting.
    pub duplicate_executions: u64,
    /// The part of `duplicate_executions` where the superseded holder is known to have been
    /// working: it wrote an extend or a done carrying its token (valid or not).
    pub confirmed_duplicate_executions: u64,
    /// Accepted dones beyond the first per task: effects committed twice. Zero unless the
    /// verdict is broken (each is also a [`Violation::CompletedTwice`](super::Violation::CompletedTwice)).
    pub duplicate_effects: u64,
    /// The most winning claims any one task needed.
    pub max_wins_per_task: u32,
}
