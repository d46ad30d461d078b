//! The harness's own reader of the claims log: it tells when a run is over.
//!
//! A run is over when every task it enqueued is finished — its done accepted or the task
//! dead-lettered — *in the log*, as any reader would judge it. So the harness follows the claims
//! partition from its first record, applies every record to its own
//! [`QueueState`](booblik_samples::queue::state::QueueState) (the same pure rules as the
//! workers), and records which tasks finished and when. Workers' events would only say what each
//! worker believes it appended.
//!
//! The observer is one more reader of the claims log (it does not read the tasks log: the
//! verdict ignores it), and it shares the two cores with the system it measures. So it does not
//! follow every append: after each read that brought records it pauses [`OBSERVER_PACE_MS`],
//! and the next read takes everything appended meanwhile. Following every append cost a
//! 30-worker run 4-7 % of its tasks/s and 11-13 % of its claim p50 (a long poll woken, answered
//! and folded per append, on the same cores as the broker and the workers), a load the peers'
//! runs do not carry.
//!
//! The pause must not make a run look longer than it was: a task's finishing time is when the
//! done the log accepted was acknowledged to its worker (the worker's `DoneAppended` event,
//! matched by offset), as a peer's is when its server acknowledged the done; only a task with
//! no such event (dead-lettered, or its worker killed before it could tell) falls back to when
//! the observer read it. See [`FinishedTally::last_finished_at`].

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use booblik_samples::engine::{LogEngine, MAX_READ_RECORDS, ReadLimits};
use booblik_samples::queue::record::ClaimsRecord;
use booblik_samples::queue::state::{Event, QueueConfig, QueueState};
use booblik_samples::support::retry::RETRY_BACKOFF_MS;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use uuid::Uuid;

/// Transient read failures in a row after which the observer gives up.
const MAX_CONSECUTIVE_READ_FAILURES: u32 = 20;

/// The observer's pause after a read that brought records (module docs). It bounds how late
/// the observer learns that a run is over, not the run's measured end.
pub const OBSERVER_PACE_MS: u64 = 5;

/// One task finished in the log, as the observer read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finish {
    /// The task.
    pub task_id: Uuid,
    /// Offset of the accepted done; `None` for a dead-lettered task.
    pub done_offset: Option<i64>,
    /// When the run learned of it: the observer's read (a peer's run: when its worker had the
    /// server's answer to the done).
    pub observed_at: Instant,
}

#[derive(Debug, Default)]
struct Finished {
    ids: HashSet<Uuid>,
    /// `ids` in the order they finished, so a reader can take only what is new.
    order: Vec<Finish>,
}

/// The conductor's tally of finished tasks among those it submitted, kept up to date by
/// [`Observer::finished_among`] from what finished since its last call. A check costs the tasks
/// that finished since the last one, not one lookup per submitted task: the conductor checks
/// every 10 ms, and at 9 000 tasks the full count took 4 % of a core in a 30-worker profile.
/// The peers' conductor uses it too (`peers/driver.rs`), with each finish stamped when its
/// worker had the server's answer.
#[derive(Debug, Default)]
pub struct FinishedTally {
    /// Entries of the observer's `order` already looked at.
    seen: usize,
    /// Finished tasks found among the submitted ones.
    counted: Vec<Finish>,
    /// Finished tasks not (yet) among the submitted ones: a trickle's task can finish before
    /// its submission reaches the conductor, and an external broker's log holds earlier runs.
    unmatched: Vec<Finish>,
}

impl FinishedTally {
    /// Takes the finished tasks of `order` past the last call (`order` only grows) and returns
    /// how many finished tasks are among `tasks`.
    pub fn update<V>(&mut self, order: &[Finish], tasks: &HashMap<Uuid, V>) -> usize {
        self.unmatched.extend_from_slice(&order[self.seen..]);
        self.seen = order.len();
        let counted = &mut self.counted;
        self.unmatched.retain(|finish| {
            let submitted = tasks.contains_key(&finish.task_id);
            if submitted {
                counted.push(*finish);
            }
            !submitted
        });
        self.counted.len()
    }

    /// When the last of the counted tasks finished: for a task finished by a done, when that
    /// done (the offset the log accepted) was acknowledged to its worker, as
    /// `done_acknowledged_at` says; for any other, or when that is unknown, when the observer
    /// read it. `None` before any task finished.
    pub fn last_finished_at(
        &self,
        done_acknowledged_at: impl Fn(i64) -> Option<Instant>,
    ) -> Option<Instant> {
        self.counted
            .iter()
            .map(|finish| {
                finish
                    .done_offset
                    .and_then(&done_acknowledged_at)
                    .unwrap_or(finish.observed_at)
            })
            .max()
    }
}

/// A running observer.
#[derive(Debug)]
pub struct Observer {
    finished: Arc<Mutex<Finished>>,
    task: JoinHandle<anyhow::Result<()>>,
}

impl Observer {
    /// Starts following partition 0 of `claims_topic` on `engine` from its first record.
    pub async fn start(
        engine: &dyn LogEngine,
        claims_topic: &str,
        config: QueueConfig,
    ) -> anyhow::Result<Self> {
        let log = engine.open(claims_topic, 0).await?;
        let mut position = log.bounds().await?.start;
        let limits = ReadLimits {
            max_records: MAX_READ_RECORDS,
            ..ReadLimits::default()
        };
        let finished = Arc::new(Mutex::new(Finished::default()));
        let sink = Arc::clone(&finished);
        let task = tokio::spawn(async move {
            let mut state = QueueState::new(config);
            let mut failures = 0;
            loop {
                let batch = match log.read(position, limits).await {
                    Ok(batch) => batch,
                    Err(error)
                        if error.is_transient() && failures < MAX_CONSECUTIVE_READ_FAILURES =>
                    {
                        failures += 1;
                        tracing::warn!(%error, failures, "the claims observer cannot read; retrying");
                        tokio::time::sleep(Duration::from_millis(RETRY_BACKOFF_MS)).await;
                        continue;
                    }
                    Err(error) => return Err(error.into()),
                };
                failures = 0;
                position = batch.next_offset;
                let now = Instant::now();
                let mut newly = Vec::new();
                for record in &batch.records {
                    // Undecodable records are the verifier's to report; the verdict skips them.
                    let Ok(decoded) = ClaimsRecord::decode(&record.payload) else {
                        continue;
                    };
                    let done_offset = match state.apply_claims_record(record.offset, &decoded)? {
                        Event::DoneAccepted { task_id, .. } => Some((task_id, Some(record.offset))),
                        Event::TaskDeadLettered { task_id, .. } => Some((task_id, None)),
                        _ => None,
                    };
                    if let Some((task_id, done_offset)) = done_offset {
                        newly.push(Finish {
                            task_id,
                            done_offset,
                            observed_at: now,
                        });
                    }
                }
                if !newly.is_empty() {
                    let mut finished = sink.lock().expect("observer lock");
                    for finish in newly {
                        if finished.ids.insert(finish.task_id) {
                            finished.order.push(finish);
                        }
                    }
                }
                if !batch.records.is_empty() {
                    tokio::time::sleep(Duration::from_millis(OBSERVER_PACE_MS)).await;
                }
            }
        });
        Ok(Self { finished, task })
    }

    /// How many of `tasks` (the submitted ones; the map only grows) are finished. `tally`
    /// carries the count from one call to the next, and knows when the last one finished.
    pub fn finished_among<V>(&self, tasks: &HashMap<Uuid, V>, tally: &mut FinishedTally) -> usize {
        let finished = self.finished.lock().expect("observer lock");
        tally.update(&finished.order, tasks)
    }

    /// A failure of the observer (it stops at the first), if it has stopped.
    pub fn failure(&self) -> Option<String> {
        self.task
            .is_finished()
            .then(|| "the claims observer stopped".to_owned())
    }

    /// Stops following.
    pub fn stop(self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn finish(task_id: Uuid, done_offset: Option<i64>, observed_at: Instant) -> Finish {
        Finish {
            task_id,
            done_offset,
            observed_at,
        }
    }

    #[test]
    fn a_task_finished_before_its_submission_is_counted_once_it_is_submitted() {
        let (a, b, stranger) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let now = Instant::now();
        let mut submitted: HashMap<Uuid, u32> = HashMap::new();
        let mut tally = FinishedTally::default();
        submitted.insert(a, 0);
        let mut order = vec![
            finish(a, Some(1), now),
            finish(b, Some(3), now),
            finish(stranger, Some(5), now),
        ];
        assert_eq!(
            tally.update(&order, &submitted),
            1,
            "b is not submitted yet"
        );
        submitted.insert(b, 0);
        assert_eq!(
            tally.update(&order, &submitted),
            2,
            "b counts once submitted"
        );
        assert_eq!(
            tally.update(&order, &submitted),
            2,
            "nothing is counted twice"
        );
        let c = Uuid::new_v4();
        submitted.insert(c, 0);
        order.push(finish(c, None, now));
        assert_eq!(tally.update(&order, &submitted), 3);
        assert_eq!(
            tally
                .unmatched
                .iter()
                .map(|f| f.task_id)
                .collect::<Vec<_>>(),
            vec![stranger],
            "another run's task is never counted"
        );
    }

    #[test]
    fn a_run_ends_when_its_last_accepted_done_was_acknowledged_not_when_the_observer_read_it() {
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let submitted: HashMap<Uuid, u32> = [(a, 0), (b, 0)].into();
        let mut tally = FinishedTally::default();
        // The observer read both 5 ms after their dones were acknowledged.
        tally.update(
            &[finish(a, Some(10), at(15)), finish(b, Some(12), at(17))],
            &submitted,
        );
        let acknowledged: HashMap<i64, Instant> = [(10, at(10)), (12, at(12))].into();
        assert_eq!(
            tally.last_finished_at(|offset| acknowledged.get(&offset).copied()),
            Some(at(12))
        );
    }

    #[test]
    fn a_task_with_no_acknowledged_done_finishes_when_the_observer_read_it() {
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        let (done, dead_lettered, unacknowledged) =
            (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let submitted: HashMap<Uuid, u32> =
            [(done, 0), (dead_lettered, 0), (unacknowledged, 0)].into();
        let acknowledged: HashMap<i64, Instant> = [(10, at(10))].into();
        let last = |order: &[Finish]| {
            let mut tally = FinishedTally::default();
            tally.update(order, &submitted);
            tally.last_finished_at(|offset| acknowledged.get(&offset).copied())
        };
        assert_eq!(
            last(&[
                finish(done, Some(10), at(15)),
                finish(dead_lettered, None, at(20))
            ]),
            Some(at(20)),
            "a dead-lettered task has no done"
        );
        assert_eq!(
            last(&[
                finish(done, Some(10), at(15)),
                finish(unacknowledged, Some(11), at(18))
            ]),
            Some(at(18)),
            "a done its worker never reported (killed after appending it)"
        );
        assert_eq!(last(&[]), None);
    }
}
