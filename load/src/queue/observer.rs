//! The harness's own reader of the claims log: it tells when a run is over.
//!
//! A run is over when every task it enqueued is finished — its done accepted or the task
//! dead-lettered — *in the log*, as any reader would judge it. So the harness follows the claims
//! partition from its first record, applies every record to its own
//! [`QueueState`](booblik_samples::queue::state::QueueState) (the same pure rules as the
//! workers), and records which tasks finished and when. Workers' events would only say what each
//! worker believes it appended.
//!
//! The observer is one more follower of the claims log; the load it adds is that of one more
//! worker's claims follower (it does not read the tasks log: the verdict ignores it).

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

#[derive(Debug, Default)]
struct Finished {
    ids: HashSet<Uuid>,
    /// `ids` in the order they finished, so a reader can take only what is new.
    order: Vec<Uuid>,
    last_at: Option<Instant>,
}

/// The conductor's tally of finished tasks among those it submitted, kept up to date by
/// [`Observer::finished_among`] from what finished since its last call. A check costs the tasks
/// that finished since the last one, not one lookup per submitted task: the conductor checks
/// every 10 ms, and at 9 000 tasks the full count took 4 % of a core in a 30-worker profile,
/// a load the peers' runs do not carry.
#[derive(Debug, Default)]
pub struct FinishedTally {
    /// Entries of the observer's `order` already looked at.
    seen: usize,
    /// Finished tasks found among the submitted ones.
    counted: usize,
    /// Finished tasks not (yet) among the submitted ones: a trickle's task can finish before
    /// its submission reaches the conductor, and an external broker's log holds earlier runs.
    unmatched: Vec<Uuid>,
}

impl FinishedTally {
    /// Takes the finished tasks of `order` past the last call (`order` only grows) and returns
    /// how many finished tasks are among `tasks`.
    fn update<V>(&mut self, order: &[Uuid], tasks: &HashMap<Uuid, V>) -> usize {
        self.unmatched.extend_from_slice(&order[self.seen..]);
        self.seen = order.len();
        let before = self.unmatched.len();
        self.unmatched.retain(|id| !tasks.contains_key(id));
        self.counted += before - self.unmatched.len();
        self.counted
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
                    match state.apply_claims_record(record.offset, &decoded)? {
                        Event::DoneAccepted { task_id, .. }
                        | Event::TaskDeadLettered { task_id, .. } => newly.push(task_id),
                        _ => {}
                    }
                }
                if !newly.is_empty() {
                    let mut finished = sink.lock().expect("observer lock");
                    for task_id in newly {
                        if finished.ids.insert(task_id) {
                            finished.order.push(task_id);
                        }
                    }
                    finished.last_at = Some(now);
                }
            }
        });
        Ok(Self { finished, task })
    }

    /// How many of `tasks` (the submitted ones; the map only grows) are finished, and when the
    /// last task (of any) finished. `tally` carries the count from one call to the next.
    pub fn finished_among<V>(
        &self,
        tasks: &HashMap<Uuid, V>,
        tally: &mut FinishedTally,
    ) -> (usize, Option<Instant>) {
        let finished = self.finished.lock().expect("observer lock");
        (tally.update(&finished.order, tasks), finished.last_at)
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
    use super::*;

    #[test]
    fn a_task_finished_before_its_submission_is_counted_once_it_is_submitted() {
        let (a, b, stranger) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let mut submitted: HashMap<Uuid, u32> = HashMap::new();
        let mut tally = FinishedTally::default();
        submitted.insert(a, 0);
        let mut order = vec![a, b, stranger];
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
        order.push(c);
        assert_eq!(tally.update(&order, &submitted), 3);
        assert_eq!(
            tally.unmatched,
            vec![stranger],
            "another run's task is never counted"
        );
    }
}
