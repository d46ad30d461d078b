//! Running totals over the events, for reports and the load harness.

use serde::{Deserialize, Serialize};

use super::event::{Event, TaskEvent};

/// Totals of everything the state machine has judged.
///
/// Identities that hold by construction (and are checked by tests):
/// `claims == wins + lost_races + dead_lettered` (each dead-lettering is caused by one claim) and
/// `expired_leases == (wins − tasks with at least one win − releases) + dead_lettered`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Distinct tasks submitted.
    pub tasks: u64,
    /// Task records whose id had been seen before (ignored).
    pub duplicate_tasks: u64,
    /// Claim records judged.
    pub claims: u64,
    /// Claims that won a lease.
    pub wins: u64,
    /// Claims that lost, for any [`ClaimLostReason`](super::ClaimLostReason): a live lease, a
    /// finished task, a dead task.
    pub lost_races: u64,
    /// Leases that lapsed and were superseded by a later claim (that claim won or dead-lettered).
    pub expired_leases: u64,
    /// Tasks moved to the dead-letter state.
    pub dead_lettered: u64,
    /// Extends that renewed a lease.
    pub extends: u64,
    /// Extends that had no effect.
    pub void_extends: u64,
    /// Dones accepted: completed tasks.
    pub dones_accepted: u64,
    /// Dones refused by fencing: work whose result does not count.
    pub fenced_dones: u64,
    /// Repeats of an accepted done by the same holder (no effect, no lost work).
    pub repeated_dones: u64,
    /// Releases that handed a lease back.
    #[serde(default)]
    pub releases: u64,
    /// Releases that had no effect.
    #[serde(default)]
    pub void_releases: u64,
    /// Heartbeats of idle workers.
    #[serde(default)]
    pub heartbeats: u64,
}

impl Counters {
    pub(crate) fn count_task(&mut self, event: &TaskEvent) {
        match event {
            TaskEvent::Submitted { .. } => self.tasks += 1,
            TaskEvent::DuplicateSubmission { .. } => self.duplicate_tasks += 1,
        }
    }

    pub(crate) fn count(&mut self, event: &Event) {
        match event {
            Event::ClaimWon { after_expiry, .. } => {
                self.claims += 1;
                self.wins += 1;
                if *after_expiry {
                    self.expired_leases += 1;
                }
            }
            Event::ClaimLost { .. } => {
                self.claims += 1;
                self.lost_races += 1;
            }
            Event::TaskDeadLettered { .. } => {
                self.claims += 1;
                self.expired_leases += 1;
                self.dead_lettered += 1;
            }
            Event::Extended { .. } => self.extends += 1,
            Event::ExtendVoid { .. } => self.void_extends += 1,
            Event::DoneAccepted { .. } => self.dones_accepted += 1,
            Event::DoneRepeated { .. } => self.repeated_dones += 1,
            Event::DoneFenced { .. } => self.fenced_dones += 1,
            Event::Released { .. } => self.releases += 1,
            Event::ReleaseVoid { .. } => self.void_releases += 1,
            Event::Heartbeat { .. } => self.heartbeats += 1,
        }
    }
}
