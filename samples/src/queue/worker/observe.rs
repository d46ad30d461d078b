//! Telling the world what the worker did: counters ([`WorkerStats`]), events ([`WorkerEvent`])
//! and log lines, kept here so that the protocol code (`run.rs`) says each step once, in one
//! call, instead of being interleaved with plumbing.
//!
//! Events go to an observer through a bounded queue that never makes the worker wait: when
//! [`MAX_QUEUED_EVENTS`] are unread, a new event is dropped and counted.

use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use tokio::sync::mpsc;
use uuid::Uuid;

use super::event::WorkerEvent;
use super::stats::{StatsCells, WorkerStats};
use crate::queue::state::Event;

/// Events waiting for the receiver of [`Worker::events`](super::Worker::events), at most; beyond
/// this new events are dropped and counted in [`WorkerStats::events_dropped`]. A won task makes
/// five events, so this holds the steps of hundreds of tasks: an observer that reads at all never
/// loses one.
pub const MAX_QUEUED_EVENTS: usize = 4_096;

/// The worker's counters, its event queue and its log lines.
#[derive(Debug)]
pub(super) struct Observer {
    worker_id: Uuid,
    stats: StatsCells,
    events: Mutex<EventQueue>,
}

/// Where events go: nowhere until [`Observer::take_events`] is called.
#[derive(Debug, Default)]
struct EventQueue {
    taken: bool,
    sender: Option<mpsc::Sender<WorkerEvent>>,
}

impl Observer {
    pub(super) fn new(worker_id: Uuid) -> Self {
        Self {
            worker_id,
            stats: StatsCells::default(),
            events: Mutex::new(EventQueue::default()),
        }
    }

    /// The event stream: the first call creates it, later calls return `None`.
    pub(super) fn take_events(&self) -> Option<mpsc::Receiver<WorkerEvent>> {
        let mut queue = self.events.lock().expect("events lock");
        if queue.taken {
            return None;
        }
        let (sender, receiver) = mpsc::channel(MAX_QUEUED_EVENTS);
        queue.taken = true;
        queue.sender = Some(sender);
        Some(receiver)
    }

    pub(super) fn stats(&self) -> WorkerStats {
        self.stats.snapshot()
    }

    pub(super) fn idle(&self) {
        StatsCells::bump(&self.stats.idle_waits);
    }

    pub(super) fn claim_appended(&self, task_id: Uuid, offset: i64) {
        StatsCells::bump(&self.stats.claims);
        self.emit(WorkerEvent::ClaimAppended { task_id, offset });
    }

    /// The verdict on the worker's claim at `offset`: `won` if it now holds a lease (a claim that
    /// won, or an adopted lease of its own).
    pub(super) fn verdict(
        &self,
        task_id: Uuid,
        offset: i64,
        verdict: &Event,
        won: bool,
        claim_latency: Duration,
    ) {
        let cell = if matches!(verdict, Event::ClaimWon { .. }) {
            &self.stats.wins
        } else {
            &self.stats.lost_races
        };
        StatsCells::bump(cell);
        self.emit(WorkerEvent::VerdictKnown {
            task_id,
            offset,
            won,
            claim_latency,
        });
        tracing::info!(
            worker_id = %self.worker_id,
            %task_id,
            offset,
            won,
            claim_latency_us = claim_latency.as_micros() as u64,
            ?verdict,
            "claim verdict"
        );
    }

    pub(super) fn work_started(&self, task_id: Uuid, token: i64) {
        self.emit(WorkerEvent::WorkStarted { task_id, token });
        tracing::info!(worker_id = %self.worker_id, %task_id, token, "work started");
    }

    pub(super) fn extended(&self, task_id: Uuid, token: i64, offset: i64, expires_at_ms: u64) {
        StatsCells::bump(&self.stats.extends);
        tracing::debug!(worker_id = %self.worker_id, %task_id, token, offset, expires_at_ms, "lease extended");
    }

    pub(super) fn done_appended(&self, task_id: Uuid, token: i64, offset: i64) {
        self.emit(WorkerEvent::DoneAppended {
            task_id,
            token,
            offset,
        });
    }

    pub(super) fn completed(&self, task_id: Uuid, token: i64, offset: i64) {
        StatsCells::bump(&self.stats.completed);
        tracing::info!(worker_id = %self.worker_id, %task_id, token, offset, "task completed");
    }

    /// The verdict on this worker's release at shutdown.
    pub(super) fn release_judged(&self, task_id: Uuid, token: i64, event: &Event) {
        if matches!(event, Event::Released { .. }) {
            StatsCells::bump(&self.stats.releases);
            tracing::info!(worker_id = %self.worker_id, %task_id, token, "released the task in hand");
        } else {
            tracing::warn!(worker_id = %self.worker_id, %task_id, token, ?event, "the release was void; the lease lapses instead");
        }
    }

    pub(super) fn lease_lost(&self, task_id: Uuid, token: i64, why: &str) {
        StatsCells::bump(&self.stats.leases_lost);
        self.emit(WorkerEvent::LeaseLost { task_id, token });
        tracing::warn!(worker_id = %self.worker_id, %task_id, token, why, "lease lost");
    }

    fn emit(&self, event: WorkerEvent) {
        let mut queue = self.events.lock().expect("events lock");
        if let Some(sender) = &queue.sender
            && !offer(sender, event, &self.stats.events_dropped)
        {
            queue.sender = None;
        }
    }
}

/// Hands `event` to the observer without waiting: if [`MAX_QUEUED_EVENTS`] are unread it is
/// dropped and counted in `dropped`. Returns `false` once the receiver is gone.
fn offer(sender: &mpsc::Sender<WorkerEvent>, event: WorkerEvent, dropped: &AtomicU64) -> bool {
    match sender.try_send(event) {
        Ok(()) => true,
        Err(mpsc::error::TrySendError::Full(_)) => {
            StatsCells::bump(dropped);
            true
        }
        Err(mpsc::error::TrySendError::Closed(_)) => false,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::*;

    fn event(offset: i64) -> WorkerEvent {
        WorkerEvent::ClaimAppended {
            task_id: Uuid::nil(),
            offset,
        }
    }

    #[test]
    fn a_full_event_queue_drops_and_counts_instead_of_growing() {
        let (sender, mut receiver) = mpsc::channel(2);
        let dropped = AtomicU64::new(0);
        for offset in 0..5 {
            assert!(offer(&sender, event(offset), &dropped));
        }
        assert_eq!(dropped.load(Ordering::Relaxed), 3);
        assert_eq!(receiver.try_recv().ok(), Some(event(0)));
        assert_eq!(receiver.try_recv().ok(), Some(event(1)));
        assert!(receiver.try_recv().is_err());
        drop(receiver);
        assert!(
            !offer(&sender, event(5), &dropped),
            "a gone receiver is noticed"
        );
    }
}
