//! Enqueueing the tasks of a run: all at once (backlog) or at a steady rate (trickle).
//!
//! Each task goes through the sample's `submit_task_to` (one append to the tasks partition, on
//! the run's engine). Reported
//! with the task's id is its **arrival**: for a backlog the clock reading just *before* the
//! submission, for a trickle the time the schedule says it arrives (`start + index / rate`), so
//! "enqueue → claim won" includes the append itself, as a submitter would experience it, and a
//! submitter that falls behind its schedule shows as latency instead of hiding it.
//!
//! A backlog is enqueued with [`BACKLOG_SUBMISSIONS_IN_FLIGHT`] submissions pipelined on the
//! tasks partition, so that FORCED appends share fsyncs (group commit) instead of taking one
//! each: enqueueing 3 000 tasks one round trip at a time took seconds of every backlog run, and
//! no figure of the run depends on how fast its backlog was written.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use booblik_samples::engine::{Ack, PartitionLog};
use booblik_samples::queue::worker::submit_task_to;
use futures::{StreamExt, TryStreamExt};
use tokio::sync::mpsc;
use tokio::time::Instant;
use uuid::Uuid;

/// Payload of every task: small, since the work is simulated.
fn payload(index: usize) -> Vec<u8> {
    format!("load task {index}").into_bytes()
}

/// Submits `count` tasks to `tasks` with `ack` (the run's claim ack: every append of a run
/// has the same durability), at `rate_per_s` if given (else as fast as the appends go),
/// reporting `(task_id, submitted_at)` for each.
pub async fn enqueue(
    tasks: Arc<dyn PartitionLog>,
    count: usize,
    ack: Ack,
    rate_per_s: Option<f64>,
    submitted: mpsc::UnboundedSender<(Uuid, Instant)>,
) -> anyhow::Result<()> {
    if rate_per_s.is_none() {
        return enqueue_backlog(tasks, count, ack, submitted).await;
    }
    let start = Instant::now();
    for index in 0..count {
        let at = match rate_per_s {
            Some(rate) => {
                let at = scheduled_arrival(start, index, rate);
                tokio::time::sleep_until(at).await;
                at
            }
            None => Instant::now(),
        };
        let (task_id, _offset) = submit_task_to(tasks.as_ref(), payload(index), ack).await?;
        if submitted.send((task_id, at)).is_err() {
            break; // the run is over
        }
    }
    Ok(())
}

/// Submissions of a backlog in flight at once.
pub const BACKLOG_SUBMISSIONS_IN_FLIGHT: usize = 64;

/// A backlog: every task as fast as the appends go, [`BACKLOG_SUBMISSIONS_IN_FLIGHT`] at a time
/// (each reported with the clock reading just before its submission).
async fn enqueue_backlog(
    tasks: Arc<dyn PartitionLog>,
    count: usize,
    ack: Ack,
    submitted: mpsc::UnboundedSender<(Uuid, Instant)>,
) -> anyhow::Result<()> {
    let tasks = tasks.as_ref();
    futures::stream::iter(0..count)
        .map(|index| async move {
            let at = Instant::now();
            let (task_id, _offset) = submit_task_to(tasks, payload(index), ack)
                .await
                .with_context(|| format!("submitting backlog task {index}"))?;
            anyhow::Ok((task_id, at))
        })
        .buffer_unordered(BACKLOG_SUBMISSIONS_IN_FLIGHT)
        .try_for_each(|(task_id, at)| {
            // A closed receiver means the run is over; the rest are still submitted.
            let _ = submitted.send((task_id, at));
            futures::future::ready(Ok(()))
        })
        .await
}

/// When task `index` of a trickle at `rate_per_s` starting at `start` arrives.
pub fn scheduled_arrival(start: Instant, index: usize, rate_per_s: f64) -> Instant {
    start + Duration::from_secs_f64(index as f64 / rate_per_s)
}
