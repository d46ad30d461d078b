//! Enqueueing the tasks of a run: all at once (backlog) or at a steady rate (trickle).
//!
//! Each task goes through the sample's `submit_task` (one append to the tasks partition). The
//! clock reading taken just *before* the submission is reported with the task's id, so
//! "enqueue → claim won" includes the append itself, as a submitter would experience it.

use std::time::Duration;

use booblik_client::AckPolicy;
use booblik_client::Client;
use booblik_samples::queue::worker::submit_task_with_ack;
use tokio::sync::mpsc;
use tokio::time::{Instant, MissedTickBehavior};
use uuid::Uuid;

/// Payload of every task: small, since the work is simulated.
fn payload(index: usize) -> Vec<u8> {
    format!("load task {index}").into_bytes()
}

/// Submits `count` tasks to `tasks_topic` with `ack` (the run's claim ack: every append of a run
/// has the same durability), at `rate_per_s` if given (else as fast as the appends go),
/// reporting `(task_id, submitted_at)` for each.
pub async fn enqueue(
    client: Client,
    tasks_topic: String,
    count: usize,
    ack: AckPolicy,
    rate_per_s: Option<f64>,
    submitted: mpsc::UnboundedSender<(Uuid, Instant)>,
) -> anyhow::Result<()> {
    let mut ticker = rate_per_s.map(|rate| {
        let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
        ticker.set_missed_tick_behavior(MissedTickBehavior::Burst);
        ticker
    });
    for index in 0..count {
        if let Some(ticker) = &mut ticker {
            ticker.tick().await;
        }
        let at = Instant::now();
        let (task_id, _offset) =
            submit_task_with_ack(&client, &tasks_topic, payload(index), ack).await?;
        if submitted.send((task_id, at)).is_err() {
            break; // the run is over
        }
    }
    Ok(())
}
