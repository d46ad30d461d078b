//! Which workers are live, as the claims log says — for [`Pick::Rendezvous`](crate::queue::pick::Pick),
//! which ranks each task over the workers that could claim it.
//!
//! *Live* is defined from the log, so that every reader agrees without a clock of its own: a
//! worker is live at `now_ms` while its last record of any kind is younger than the lease that
//! record states (a claim's, an extend's or a heartbeat's `lease_ms`; a done or a release counts
//! with the last lease the worker stated). Idle workers write a heartbeat every lease / 2
//! (`worker/run.rs`), busy ones extend every lease / 3, so a running worker never lapses; a
//! heartbeat with `lease_ms = 0`, written at a clean shutdown, makes its writer not live at once.
//!
//! A worker is *idle* at `now_ms` if it is live and holds no lease that is live at `now_ms`:
//! those are the workers that will claim next, so the ones a task's rank is taken over.
//!
//! Liveness only guides picking; no verdict depends on it. Readers that disagree about it (a
//! worker that has read further) make different picks, never different verdicts.

use std::collections::HashMap;

use uuid::Uuid;

use super::event::Event;
use crate::queue::record::ClaimsRecord;

/// What the log says about one worker. (Every field is a time in ms: the units say so.)
#[allow(clippy::struct_field_names)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Seen {
    /// Its last record's timestamp plus the lease it stated.
    live_until_ms: u64,
    /// The last lease it stated (for records that state none).
    lease_ms: u64,
    /// Expiry of the lease it holds, 0 if none.
    holds_until_ms: u64,
}

/// Every worker that ever wrote to the claims log, with when it stops counting as live.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Liveness {
    workers: HashMap<Uuid, Seen>,
}

impl Liveness {
    /// Notes `record` and the verdict on it; returns until when its writer is live.
    pub(super) fn note(&mut self, record: &ClaimsRecord, event: &Event) -> u64 {
        let seen = self.workers.entry(record.worker_id()).or_default();
        if let Some(lease_ms) = record.lease_ms() {
            seen.lease_ms = lease_ms;
        }
        seen.live_until_ms = record.written_at_ms().saturating_add(seen.lease_ms);
        match event {
            Event::ClaimWon { expires_at_ms, .. } | Event::Extended { expires_at_ms, .. } => {
                seen.holds_until_ms = *expires_at_ms;
            }
            Event::DoneAccepted { .. } | Event::Released { .. } => seen.holds_until_ms = 0,
            _ => {}
        }
        seen.live_until_ms
    }

    /// The workers live at `now_ms`, in no particular order. O(workers ever seen).
    pub(super) fn live_at(&self, now_ms: u64) -> impl Iterator<Item = Uuid> + '_ {
        self.workers
            .iter()
            .filter(move |(_, seen)| now_ms < seen.live_until_ms)
            .map(|(&worker_id, _)| worker_id)
    }

    /// The workers live at `now_ms` that hold no lease live at `now_ms`.
    pub(super) fn idle_at(&self, now_ms: u64) -> impl Iterator<Item = Uuid> + '_ {
        self.workers
            .iter()
            .filter(move |(_, seen)| now_ms < seen.live_until_ms && seen.holds_until_ms <= now_ms)
            .map(|(&worker_id, _)| worker_id)
    }
}
