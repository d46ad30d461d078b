//! The checks at the end of a run: the log is the reference for everyone. (The events checks
//! live in the library, `booblik_samples::events::crosscheck`; these are the task queue's.)

use std::sync::Arc;

use booblik_samples::engine::LogEngine;
use booblik_samples::events::crosscheck::Check;
use booblik_samples::queue::state::{QueueConfig, QueueState, TaskStatus};
use booblik_samples::queue::verify::{VerifyConfig, verify};
use booblik_samples::queue::worker::{Freeze, ResultSink, read_logs, result_of, wall_clock_ms};

/// How each part ended: cleanly, or with its error.
pub fn parts_stopped_cleanly(ended: &[(String, anyhow::Result<()>)]) -> Vec<Check> {
    ended
        .iter()
        .map(|(name, outcome)| Check {
            passed: outcome.is_ok(),
            detail: match outcome {
                Ok(()) => format!("{name} stopped cleanly"),
                Err(error) => format!("{name} failed: {error:#}"),
            },
        })
        .collect()
}

/// Every reader read up to the log's end within its limit: `lagging` lists the others, each
/// with its limit; `waited_ms` is how long the readers were waited for after the writers stopped.
pub fn readers_caught_up(lagging: &[(String, u64)], waited_ms: u64) -> Check {
    let lagging: Vec<String> = lagging
        .iter()
        .map(|(name, limit_ms)| format!("{name} (limit {limit_ms} ms)"))
        .collect();
    Check {
        passed: lagging.is_empty(),
        detail: if lagging.is_empty() {
            format!("every reader caught up with the log, {waited_ms} ms after the writers stopped")
        } else {
            format!("not caught up within their limits: {}", lagging.join(", "))
        },
    }
}

/// `queue-verify` in-process: both logs replayed, every invariant checked.
pub async fn queue_verified(engine: &Arc<dyn LogEngine>) -> anyhow::Result<Check> {
    let (tasks, claims) = read_logs(engine, "tasks", "claims").await?;
    let report = verify(&tasks, &claims, &VerifyConfig::drained_at(wall_clock_ms()));
    let s = &report.summary;
    Ok(Check {
        passed: report.is_clean(),
        detail: format!(
            "task queue verified: {} tasks, {} completed, {} claims, {} lost races, {} expired leases, {} fenced dones, {} violations",
            s.tasks,
            s.completed,
            s.claims,
            s.lost_races,
            s.expired_leases,
            s.fenced_dones,
            report.violations.len()
        ),
    })
}

/// Exactly-once effects: every task the claims log says was done in this run (a done at or after
/// `claims_start`) has its effect in the sink, committed under the token it completed with.
pub async fn sink_holds_every_completed_effect(
    engine: &Arc<dyn LogEngine>,
    sink: &ResultSink,
    claims_start: i64,
) -> anyhow::Result<Check> {
    let (tasks, claims) = read_logs(engine, "tasks", "claims").await?;
    let mut state = QueueState::new(QueueConfig::default());
    for (offset, task) in &tasks {
        state.apply_task(*offset, task)?;
    }
    for (offset, record) in &claims {
        state.apply_claims_record(*offset, record)?;
    }
    let mut completed = 0;
    let mut missing = 0;
    for task in state.tasks() {
        let TaskStatus::Done {
            lease, done_offset, ..
        } = &task.status
        else {
            continue;
        };
        if *done_offset < claims_start {
            continue;
        }
        completed += 1;
        let expected = task.submission.as_ref().map(|s| result_of(&s.payload));
        let held = sink.effect(task.task_id);
        if held.map(|c| (c.token, Some(c.effect))) != Some((lease.token, expected)) {
            missing += 1;
        }
    }
    Ok(Check {
        passed: missing == 0,
        detail: format!(
            "result sink: {completed} tasks completed in this run, {missing} without their effect under the completing token; {} effects held, {} refused",
            sink.len(),
            sink.refused()
        ),
    })
}

/// Fencing shown: a worker froze holding a task, a newer holder fenced the sink, and the frozen
/// worker's late effect — and only it — was refused.
pub fn frozen_worker_was_fenced(freeze: &Freeze, sink: &ResultSink) -> Check {
    let Some(frozen) = freeze.frozen() else {
        return Check {
            passed: false,
            detail: "fencing: no worker froze (no task was worked on?)".to_owned(),
        };
    };
    let newer = sink
        .highest_token(frozen.task_id)
        .filter(|&token| token > frozen.token);
    let refused = sink.refused();
    Check {
        passed: newer.is_some() && refused == 1,
        detail: format!(
            "fencing: {} froze {} ms holding task {} (token {}); {}; the sink refused its late effect: {refused} refused",
            frozen.who,
            freeze.duration().as_millis(),
            &frozen.task_id.to_string()[..8],
            frozen.token,
            newer.map_or_else(
                || "no newer holder fenced the task".to_owned(),
                |token| format!("the next holder fenced it with token {token}")
            ),
        ),
    }
}
