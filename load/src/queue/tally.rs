//! What the workers report while a run goes on, folded in one place: claim latencies, the time
//! of each task's first winning claim, and which worker is working on what (the chaos monkey
//! kills only workers that are mid-task).
//!
//! The counts of work (attempts, wins, …) are deliberately *not* taken from here but from the
//! verifier over the logs at the end; events are what a worker believes, the log is what
//! happened.

use std::collections::HashMap;

use booblik_samples::queue::worker::WorkerEvent;
use tokio::time::Instant;
use uuid::Uuid;

use crate::latency::LatencyRecorder;

/// The running fold of every worker's events. Workers are numbered by slot, in start order
/// (replacements get new slots).
#[derive(Debug, Default)]
pub struct Tally {
    /// Claim append issued → verdict known.
    pub claim_latency: LatencyRecorder,
    /// Verdicts seen, by outcome.
    pub verdicts_won: u64,
    /// Verdicts that lost.
    pub verdicts_lost: u64,
    /// Claim latencies left out as each worker's warm-up.
    pub warmup_discarded: u64,
    warmup_claims_per_worker: u64,
    claims_per_slot: Vec<u64>,
    first_win: HashMap<Uuid, Instant>,
    /// When each done (by its offset in the claims log) was acknowledged to its worker: the run
    /// ends when the last accepted one was (`observer.rs`).
    done_acknowledged_at: HashMap<i64, Instant>,
    working: Vec<Option<(Uuid, i64)>>,
}

impl Tally {
    /// A tally that leaves each worker's first `warmup_claims_per_worker` claim latencies out.
    pub fn new(warmup_claims_per_worker: u64) -> Self {
        Self {
            warmup_claims_per_worker,
            ..Self::default()
        }
    }

    /// Applies one event of worker `slot`, which happened at `at` (stamped on the worker's
    /// thread, so the conductor's own delays do not move it).
    pub fn apply(&mut self, slot: usize, event: &WorkerEvent, at: Instant) {
        if self.working.len() <= slot {
            self.working.resize(slot + 1, None);
            self.claims_per_slot.resize(slot + 1, 0);
        }
        match event {
            WorkerEvent::VerdictKnown {
                task_id,
                won,
                claim_latency,
                ..
            } => {
                self.claims_per_slot[slot] += 1;
                if self.claims_per_slot[slot] > self.warmup_claims_per_worker {
                    self.claim_latency.record(*claim_latency);
                } else {
                    self.warmup_discarded += 1;
                }
                if *won {
                    self.verdicts_won += 1;
                    self.first_win.entry(*task_id).or_insert(at);
                } else {
                    self.verdicts_lost += 1;
                }
            }
            WorkerEvent::WorkStarted { task_id, token } => {
                self.working[slot] = Some((*task_id, *token));
            }
            WorkerEvent::DoneAppended { offset, .. } => {
                self.working[slot] = None;
                self.done_acknowledged_at.insert(*offset, at);
            }
            WorkerEvent::LeaseLost { .. } => {
                self.working[slot] = None;
            }
            // Not forwarded by the conductor's workers (`run.rs`); nothing to fold.
            WorkerEvent::ClaimAppended { .. } => {}
        }
    }

    /// When the done at `offset` of the claims log was acknowledged to its worker, if a worker
    /// reported it.
    pub fn done_acknowledged_at(&self, offset: i64) -> Option<Instant> {
        self.done_acknowledged_at.get(&offset).copied()
    }

    /// Slots whose worker has started work and not yet appended its done (as far as its events
    /// say).
    pub fn working_slots(&self) -> Vec<usize> {
        self.working
            .iter()
            .enumerate()
            .filter_map(|(slot, w)| w.map(|_| slot))
            .collect()
    }

    /// Forgets what a killed worker was doing.
    pub fn forget(&mut self, slot: usize) {
        if let Some(w) = self.working.get_mut(slot) {
            *w = None;
        }
    }

    /// Enqueue → first winning verdict, for every task with both times.
    pub fn enqueue_to_claim(&self, submitted: &HashMap<Uuid, Instant>) -> LatencyRecorder {
        let mut latency = LatencyRecorder::new();
        for (task_id, won_at) in &self.first_win {
            if let Some(submitted_at) = submitted.get(task_id) {
                latency.record(won_at.saturating_duration_since(*submitted_at));
            }
        }
        latency
    }
}
