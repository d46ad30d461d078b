//! The task-queue experiment: claim latency and lost work of the claims-and-leases queue
//! (`booblik_samples::queue`) at several worker counts, pick strategies and arrival patterns.
//!
//! One run ([`run::run`]): a fresh broker (or `--broker`), `tasks_total` tasks enqueued —
//! all before the workers start (**backlog**) or at a steady rate while they run (**trickle**)
//! — and `workers` sample [`Worker`](booblik_samples::queue::worker::Worker)s, each with its own
//! client, connections and followers. The run ends when every task is finished (done or
//! dead-lettered) in the claims log, or at its time limit. Then:
//!
//! * **claim latency** comes from the workers' own `VerdictKnown` events (append issued →
//!   verdict known by the worker's follower), in an HDR histogram;
//! * **enqueue → claim won** from the harness's clock: before `submit_task` to the event of the
//!   task's first winning claim (under a backlog this is mostly time spent waiting in it);
//! * **every count of work** — attempts, wins, lost races, duplicate executions, fenced dones,
//!   duplicate effects, completed / dead-lettered / never completed — from the verifier
//!   (`queue::verify`) over both logs read back at the end: the logs are the truth, not the
//!   workers' view of them;
//! * **tasks/s** = completed tasks ÷ (last accepted done − workers started), against the
//!   **ceiling** `workers × 1000 / (work_ms + 2 × claim_p50_ms)`: each task costs a worker its
//!   work plus two claims-log round trips (its claim, and its done, which it waits to see
//!   applied). Under a trickle the ceiling is also capped by the arrival rate.
//!
//! `--chaos` ([`chaos`]) kills a share of the workers while they work and starts replacements;
//! their tasks must be taken over after the lease expires, executed again, and completed once.

pub mod arrival;
pub mod chaos;
pub mod observer;
pub mod plots;
pub mod run;
pub mod tally;

use booblik_samples::queue::pick::Pick;
use serde::Serialize;
use std::fmt::Write as _;

use crate::ack::Ack;
use crate::baseline::Baseline;
use crate::latency::Percentiles;

/// How tasks arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Every task is in the log before the workers start.
    Backlog,
    /// Tasks arrive at a steady rate while the workers run.
    Trickle,
}

/// Which pick strategy, as a command-line value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PickArg {
    /// The oldest claimable task.
    First,
    /// A uniformly random claimable task.
    Random,
}

impl PickArg {
    /// The sample's pick.
    pub fn pick(self) -> Pick {
        match self {
            PickArg::First => Pick::First,
            PickArg::Random => Pick::Random,
        }
    }

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            PickArg::First => "first",
            PickArg::Random => "random",
        }
    }
}

impl Arrival {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Arrival::Backlog => "backlog",
            Arrival::Trickle => "trickle",
        }
    }
}

/// Killing workers mid-task.
#[derive(Debug, Clone, Copy)]
pub struct ChaosConfig {
    /// Share of the workers killed (at least one).
    pub share: f64,
    /// The kill wave starts once this share of the tasks is finished.
    pub after_finished_share: f64,
    /// Start a replacement for every killed worker.
    pub replace: bool,
}

/// One queue run.
#[derive(Debug, Clone, Copy)]
pub struct QueueRunConfig {
    /// Workers.
    pub workers: usize,
    /// Pick strategy.
    pub pick: PickArg,
    /// Arrival pattern.
    pub arrival: Arrival,
    /// Tasks enqueued.
    pub tasks: usize,
    /// Trickle arrival rate, tasks per second.
    pub trickle_per_s: f64,
    /// Simulated work per task.
    pub work_ms: u64,
    /// Lease length.
    pub lease_ms: u64,
    /// Ack policy of claims, extends and dones.
    pub claim_ack: Ack,
    /// Kill workers mid-task.
    pub chaos: Option<ChaosConfig>,
    /// Upper bound on the run (enqueueing included).
    pub max_run_ms: u64,
}

/// What one queue run measured. Field names are the JSON contract of the experiment.
#[derive(Debug, Clone, Serialize)]
pub struct QueueRun {
    /// Workers (replacements not counted).
    pub workers: usize,
    /// `first` or `random`.
    pub pick: PickArg,
    /// `backlog` or `trickle`.
    pub arrival: Arrival,
    /// Ack policy of claims.
    pub claim_ack: Ack,
    /// Whether workers were killed.
    pub chaos: bool,
    /// Simulated work per task (ms).
    pub work_ms: u64,
    /// Lease (ms).
    pub lease_ms: u64,
    /// Trickle rate (tasks/s), 0 for a backlog.
    pub arrival_per_s: f64,
    /// Claim append issued → verdict known, µs.
    pub claim_latency_us: Percentiles,
    /// Enqueue → first winning claim's verdict known, µs.
    pub enqueue_to_claim_us: Percentiles,
    /// Claims appended (verifier).
    pub attempts: u64,
    /// Winning claims.
    pub wins: u64,
    /// Claims that did not win.
    pub lost_races: u64,
    /// `lost_races / attempts`, percent.
    pub lost_race_pct: f64,
    /// Claims appended while at least 2 × workers tasks had never been claimed (backlog runs).
    pub deep_backlog_claims: Option<u64>,
    /// Lost races among those claims, percent: collisions while the backlog was deep, without
    /// the drain at the end.
    pub lost_race_pct_deep_backlog: Option<f64>,
    /// `attempts / tasks_total`.
    pub attempts_per_task: f64,
    /// `(attempts, tasks)` pairs: how many tasks needed that many claims.
    pub attempts_histogram: Vec<(u64, u64)>,
    /// Winning claims beyond the first per task (re-executions after an expired lease).
    pub duplicate_executions: u64,
    /// Leases that expired and were taken over.
    pub expired_leases: u64,
    /// Dones refused by fencing.
    pub fenced_dones: u64,
    /// Accepted dones beyond the first per task (must be 0).
    pub duplicate_effects: u64,
    /// Tasks enqueued.
    pub tasks_total: u64,
    /// Tasks with an accepted done.
    pub tasks_completed: u64,
    /// `tasks_total - tasks_completed`.
    pub tasks_never_completed: u64,
    /// Tasks dead-lettered.
    pub dead_lettered: u64,
    /// Invariant violations the verifier found (must be 0).
    pub violations: u64,
    /// Workers killed mid-task.
    pub workers_killed: u64,
    /// Replacement workers started.
    pub workers_replaced: u64,
    /// Completed tasks per second.
    pub tasks_per_s: f64,
    /// `workers × 1000 / (work_ms + 2 × claim_p50_ms)` (capped by the trickle rate).
    pub ceiling_tasks_per_s: f64,
    /// Seconds from workers started to the last accepted done (or the time limit).
    pub elapsed_s: f64,
    /// CPU seconds of this process (workers and embedded broker) during the run.
    pub process_cpu_s: f64,
    /// Ratios to the baseline of the same invocation.
    pub vs_baseline: QueueRatios,
}

/// Queue figures relative to the machine's floor.
#[allow(clippy::struct_field_names)] // JSON keys that read as the ratio they are
#[derive(Debug, Clone, Copy, Serialize)]
pub struct QueueRatios {
    /// `claim p50 / loopback RTT p50`.
    pub claim_p50_over_rtt_p50: f64,
    /// `claim p99 / loopback RTT p50`.
    pub claim_p99_over_rtt_p50: f64,
    /// `claim p50 / one-thread loopback RTT p50` (the kernel floor, no wake-ups).
    pub claim_p50_over_rtt_same_thread_p50: f64,
    /// `claim p50 / fsync p50` (meaningful under `--claim-ack forced`).
    pub claim_p50_over_fsync_p50: f64,
}

/// The sweep: every combination of the lists, in order.
pub fn sweep(
    workers: &[usize],
    picks: &[PickArg],
    arrivals: &[Arrival],
    template: QueueRunConfig,
) -> Vec<QueueRunConfig> {
    let mut configs = Vec::new();
    for &w in workers {
        for &pick in picks {
            for &arrival in arrivals {
                configs.push(QueueRunConfig {
                    workers: w,
                    pick,
                    arrival,
                    ..template
                });
            }
        }
    }
    configs
}

/// A short label of a run, for the progress bar and plots.
pub fn label(config: &QueueRunConfig) -> String {
    format!(
        "queue {}w {} {}{}{}",
        config.workers,
        config.pick.name(),
        config.arrival.name(),
        if config.chaos.is_some() { " chaos" } else { "" },
        if config.claim_ack == Ack::Forced {
            " forced"
        } else {
            ""
        }
    )
}

/// The queue results as two markdown tables: latency, then work.
pub fn markdown(runs: &[&QueueRun], baseline: &Baseline) -> String {
    let name = |r: &QueueRun| {
        format!(
            "{} | {} | {} | {} | {}",
            r.workers,
            r.pick.name(),
            r.arrival.name(),
            r.claim_ack.name(),
            if r.chaos { "yes" } else { "no" }
        )
    };
    let mut out = String::from(
        "Claim latency (append issued → verdict known by the worker's follower), µs:\n\n\
         | workers | pick | arrival | ack | chaos | p50 | p90 | p99 | p99.9 | max | p50 ÷ RTT | p50 ÷ one-thread RTT | p99 ÷ RTT | enqueue → won p50 | enqueue → won p99 |\n\
         |---:|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in runs {
        let l = r.claim_latency_us;
        let _ = writeln!(
            out,
            "| {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.1} | {:.1} | {:.1} | {:.0} | {:.0} |",
            name(r),
            l.p50,
            l.p90,
            l.p99,
            l.p999,
            l.max,
            r.vs_baseline.claim_p50_over_rtt_p50,
            r.vs_baseline.claim_p50_over_rtt_same_thread_p50,
            r.vs_baseline.claim_p99_over_rtt_p50,
            r.enqueue_to_claim_us.p50,
            r.enqueue_to_claim_us.p99,
        );
    }
    out.push_str(
        "\nWork (from the verifier over both logs):\n\n\
         | workers | pick | arrival | ack | chaos | tasks | completed | never | dead | attempts | wins | lost | lost % | lost % deep backlog | attempts/task | dup. exec. | expired | fenced | dup. effects | violations | killed | tasks/s | ceiling | % of ceiling | CPU s |\n\
         |---:|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in runs {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {:.2} | {} | {:.3} | {} | {} | {} | {} | {} | {} | {:.0} | {:.0} | {:.0} | {:.1} |",
            name(r),
            r.tasks_total,
            r.tasks_completed,
            r.tasks_never_completed,
            r.dead_lettered,
            r.attempts,
            r.wins,
            r.lost_races,
            r.lost_race_pct,
            r.lost_race_pct_deep_backlog
                .map_or_else(|| "—".to_owned(), |p| format!("{p:.2}")),
            r.attempts_per_task,
            r.duplicate_executions,
            r.expired_leases,
            r.fenced_dones,
            r.duplicate_effects,
            r.violations,
            r.workers_killed,
            r.tasks_per_s,
            r.ceiling_tasks_per_s,
            100.0 * r.tasks_per_s / r.ceiling_tasks_per_s.max(f64::MIN_POSITIVE),
            r.process_cpu_s,
        );
    }
    let _ = writeln!(
        out,
        "\nLoopback RTT p50 (baseline): {:.1} µs (one thread: {:.1} µs); fsync p50: {:.0} µs. \
         Ceiling = workers × 1000 / (work_ms + 2 × claim p50 ms), capped by the arrival rate for a trickle. \
         \"Deep backlog\": claims appended while at least 2 × workers tasks had never been claimed.",
        baseline.rtt_us_p50, baseline.rtt_same_thread_us_p50, baseline.fsync_us_p50
    );
    out
}
