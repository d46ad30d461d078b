//! The task-queue experiment: claim latency and lost work of the claims-and-leases queue
//! (`booblik_samples::queue`) at several worker counts, pick strategies and arrival patterns.
//!
//! One run ([`run::run`]): a fresh broker (or `--broker`), `tasks_total` tasks enqueued —
//! all before the workers start (**backlog**) or at a steady rate while they run (**trickle**)
//! — and `workers` sample [`Worker`](booblik_samples::queue::worker::Worker)s, each on its own
//! thread: independent (its own client, connections and followers) or, with `--pool`, members
//! of a [`WorkerPool`](booblik_samples::queue::worker::WorkerPool) whose followers run on a
//! thread of their own (`--pool-connection shared`: appending through the pool's connection
//! too). The run ends when every task is finished (done or
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
//!   **ceiling** ([`ceiling_tasks_per_s`]) `workers × 1000 / (work_ms + round trips ×
//!   claim_p50_ms)`: each task costs a worker its work plus one round trip when its done rides
//!   with its next claim (the default), two when the done goes on its own (the claim, and the
//!   done, which the worker waits to see applied). Under a trickle the ceiling is also capped
//!   by the arrival rate.
//!
//! `--engine jetstream` runs the same workers, verifier and sink over two fresh R3 streams per run
//! on the 3-node NATS cluster the `jetstream-workqueue` peer uses ([`run::run_on_jetstream`]),
//! reported as `claims-jetstream` beside that peer.
//!
//! `--chaos` ([`chaos`]) kills a share of the workers while they work and starts replacements;
//! their tasks must be taken over after the lease expires, executed again, and completed once.

pub mod arrival;
pub mod chaos;
pub mod effects;
pub mod observer;
pub mod peers;
pub mod plots;
pub mod report;
pub mod run;
pub mod tally;
pub mod thread;

use crate::ack::Ack;
use crate::broker_host::BrokerProcess;
use crate::latency::Percentiles;
use booblik_samples::queue::pick::Pick;
use serde::Serialize;

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
    /// Each worker its own order, by rendezvous hashing of (task, worker) over the live workers
    /// (the workers run at protocol level 2, which writes the heartbeats liveness needs).
    Rendezvous,
}

impl PickArg {
    /// The sample's pick.
    pub fn pick(self) -> Pick {
        match self {
            PickArg::First => Pick::First,
            PickArg::Random => Pick::Random,
            PickArg::Rendezvous => Pick::Rendezvous,
        }
    }

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            PickArg::First => "first",
            PickArg::Random => "random",
            PickArg::Rendezvous => "rendezvous",
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

/// What the chaos of a run does to the workers it picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChaosMode {
    /// Kill the worker mid-task (its connections close; it never comes back).
    Crash,
    /// Freeze the worker's OS thread mid-task for 1.5 × the lease, in a way it cannot see;
    /// afterwards it commits its effect and its done as if nothing had happened.
    Stall,
}

impl ChaosMode {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            ChaosMode::Crash => "crash",
            ChaosMode::Stall => "stall",
        }
    }
}

/// Killing or freezing workers mid-task.
#[derive(Debug, Clone, Copy)]
pub struct ChaosConfig {
    /// Crash or stall.
    pub mode: ChaosMode,
    /// Share of the workers hit (at least one).
    pub share: f64,
    /// A crash wave starts once this share of the tasks is finished. (A stall wave starts when
    /// fewer than [`STALL_WHEN_UNFINISHED_PER_WORKER`] × workers tasks are unfinished: see
    /// [`chaos`].)
    pub after_finished_share: f64,
    /// Start a replacement for every killed worker (crash only).
    pub replace: bool,
}

/// A stall wave starts once at most this many unfinished tasks per worker remain, so that the
/// stalled worker's lease lapses while the others are idle and one of them takes it over at once
/// (see [`chaos`]).
pub const STALL_WHEN_UNFINISHED_PER_WORKER: usize = 2;
/// A stall lasts this many leases (×10: 15 = 1.5 leases).
pub const STALL_LEASES_X10: u64 = 15;

/// The system under test: booblik, the same claims protocol over JetStream, or one of the peers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum System {
    /// The claims-and-leases queue over booblik.
    Booblik,
    /// The same claims-and-leases queue over two R3 streams of a 3-node NATS JetStream cluster
    /// (`--engine jetstream`).
    ClaimsOnJetstream,
    /// A peer queue server.
    Peer(peers::Peer),
}

impl System {
    /// The name in the report (`"booblik"`, `"claims-jetstream"`, or the peer's `--peers` name).
    pub fn name(self) -> &'static str {
        match self {
            System::Booblik => "booblik",
            System::ClaimsOnJetstream => "claims-jetstream",
            System::Peer(peer) => peer.name(),
        }
    }
}

/// One queue run.
#[derive(Debug, Clone, Copy)]
pub struct QueueRunConfig {
    /// The system under test.
    pub system: System,
    /// Workers.
    pub workers: usize,
    /// Workers per [`WorkerPool`](booblik_samples::queue::worker::WorkerPool) (booblik only):
    /// members of a pool share one pair of followers. 1: every worker has its own followers.
    pub pool: usize,
    /// Whether a pool's members append through the pool's own connection instead of one each.
    pub pool_connection: PoolConnection,
    /// Pick strategy (booblik only: a peer's server hands out tasks itself).
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
    /// Ack policy of claims, extends and dones (booblik only).
    pub claim_ack: Ack,
    /// Kill or freeze workers mid-task.
    pub chaos: Option<ChaosConfig>,
    /// Upper bound on the run (enqueueing included).
    pub max_run_ms: u64,
    /// Which repetition of this configuration (0-based).
    pub repetition: u32,
    /// Each worker's first claims are a warm-up (connections, caches, page faults): their
    /// latencies are left out of the histogram.
    pub warmup_claims_per_worker: u64,
    /// Whether a worker sends a finished task's done together with its next claim (one
    /// round trip and one durable write for both) rather than on its own first.
    pub done_with_next_claim: bool,
}

/// The tasks/s `workers` would reach if each task cost exactly its work and its round trips
/// at the claim p50: one round trip with the done riding on the next claim, two without.
pub fn ceiling_tasks_per_s(
    workers: usize,
    work_ms: u64,
    claim_p50_ms: f64,
    done_with_next_claim: bool,
) -> f64 {
    let round_trips = if done_with_next_claim { 1.0 } else { 2.0 };
    workers as f64 * 1_000.0 / (work_ms as f64 + round_trips * claim_p50_ms)
}

/// What one queue run measured. Field names are the JSON contract of the experiment.
#[derive(Debug, Clone, Serialize)]
pub struct QueueRun {
    /// `"booblik"` or the peer's name.
    pub system: &'static str,
    /// Where booblik's broker ran: `"child"` (a process of its own, like the peers' servers)
    /// or `"embedded"` (in the harness's process); null for a peer, JetStream or `--broker`.
    pub broker_process: Option<BrokerProcess>,
    /// How booblik's broker wrote its segments: `"mapped"` or `"file"` (`--write-mode`); null
    /// where `broker_process` is.
    pub broker_write_mode: Option<&'static str>,
    /// Which repetition of its configuration (0-based).
    pub repetition: u32,
    /// Workers (replacements not counted).
    pub workers: usize,
    /// Workers sharing one set of followers (1: every worker has its own).
    pub pool: u64,
    /// `"own"`: each pooled worker appends through a connection of its own; `"shared"`: through
    /// its pool's connection. `"own"` for independent workers and peers.
    pub pool_connection: PoolConnection,
    /// `first` or `random` (booblik); null for a peer, whose server picks.
    pub pick: Option<PickArg>,
    /// `backlog` or `trickle`.
    pub arrival: Arrival,
    /// Ack policy of claims (booblik); null for a peer, whose durability is in its name.
    pub claim_ack: Option<Ack>,
    /// `"crash"`, `"stall"` or null.
    pub chaos: Option<ChaosMode>,
    /// Simulated work per task (ms).
    pub work_ms: u64,
    /// Lease (ms).
    pub lease_ms: u64,
    /// Trickle rate (tasks/s), 0 for a backlog.
    pub arrival_per_s: f64,
    /// Claim issued → known to be won (booblik: verdict known), µs, warm-up excluded.
    pub claim_latency_us: Percentiles,
    /// Claim latencies in the histogram.
    pub claim_latency_samples: u64,
    /// Claim latencies left out as warm-up (each worker's first claims).
    pub warmup_claims_discarded: u64,
    /// Whether each worker sent a finished task's done together with its next claim (booblik:
    /// one batch; Redis: one pipeline; PostgreSQL: one statement; JetStream: sent together).
    pub done_with_next_claim: bool,
    /// Enqueue (a trickle: the scheduled arrival) → first winning claim known, µs.
    pub enqueue_to_claim_us: Percentiles,
    /// Claims appended (booblik, verifier) or claims that returned a task (peers).
    pub attempts: u64,
    /// Winning claims.
    pub wins: u64,
    /// Claims that did not win (a peer's server never lets two claims race: 0).
    pub lost_races: u64,
    /// `lost_races / attempts`, percent.
    pub lost_race_pct: f64,
    /// Peers: claim commands or queries that found no task (idle polls included); null for
    /// booblik, whose idle workers wait without asking.
    pub empty_claims: Option<u64>,
    /// Claims appended while at least 2 × workers tasks had never been claimed (booblik
    /// backlog runs).
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
    /// Dones refused (booblik: fenced by the verdict; Postgres: the token check matched no
    /// row; Redis: `XACK` found the message no longer pending).
    pub fenced_dones: u64,
    /// Accepted dones beyond the first per task (booblik: from the verifier; must be 0).
    pub duplicate_dones: u64,
    /// Effects the run's effect sink took: one per executed task that got to commit.
    pub effects_committed: u64,
    /// Effects the sink took from a displaced holder, under a token lower than one already
    /// fenced or committed for the task (booblik's sink fences and must show 0; the peers'
    /// cannot). A re-execution after a crash, under a newer token, is not one (`effects.rs`).
    pub duplicate_effects: u64,
    /// Effects replaced by a newer holder's under a higher token: re-executions after a crash
    /// that had committed, at-least-once execution as the receiver sees it. Not duplicates.
    pub superseded_effects: u64,
    /// Effects (and fences) the fencing sink refused: a displaced holder's late commit.
    pub refused_effects: u64,
    /// Tasks enqueued.
    pub tasks_total: u64,
    /// Tasks with an accepted done.
    pub tasks_completed: u64,
    /// `tasks_total - tasks_completed - dead_lettered`.
    pub tasks_never_completed: u64,
    /// Tasks dead-lettered.
    pub dead_lettered: u64,
    /// Invariant violations the verifier found (booblik; must be 0). Peers are not verified:
    /// their counts come from the server at the end of the run.
    pub violations: u64,
    /// Workers killed mid-task.
    pub workers_killed: u64,
    /// Workers frozen mid-task.
    pub workers_stalled: u64,
    /// Replacement workers started.
    pub workers_replaced: u64,
    /// Completed tasks per second.
    pub tasks_per_s: f64,
    /// [`ceiling_tasks_per_s`] (capped by the trickle rate).
    pub ceiling_tasks_per_s: f64,
    /// Seconds from workers started to the last accepted done (or the time limit).
    pub elapsed_s: f64,
    /// CPU seconds of this process (workers and embedded broker) during the run; a peer's
    /// server runs in its own process and is not included.
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
    /// `claim p50 / fsync p50` (meaningful for durable claims).
    pub claim_p50_over_fsync_p50: f64,
}

impl QueueRatios {
    /// The claim latency of a run against the baseline.
    pub fn of(claim: &Percentiles, baseline: &crate::baseline::Baseline) -> Self {
        Self {
            claim_p50_over_rtt_p50: claim.p50 / baseline.rtt_us_p50,
            claim_p99_over_rtt_p50: claim.p99 / baseline.rtt_us_p50,
            claim_p50_over_rtt_same_thread_p50: claim.p50 / baseline.rtt_same_thread_us_p50,
            claim_p50_over_fsync_p50: claim.p50 / baseline.fsync_us_p50,
        }
    }
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

/// Where a pool's members send their appends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PoolConnection {
    /// Each member its own connection (and, on booblik, its own broker session).
    Own,
    /// Every member through the pool's connection, whose tasks run on the pool's thread: the
    /// broker reads the members' claims from one socket, so they share its fsyncs as a
    /// pipeline does, at the price of a hand-off between threads per request.
    Shared,
}

/// ` poolN` for workers sharing followers in pools of N (` poolN shared-conn` when they share
/// the pool's connection too); nothing for independent workers.
pub fn pool_suffix(pool: u64, connection: PoolConnection) -> String {
    match (pool > 1, connection) {
        (false, _) => String::new(),
        (true, PoolConnection::Own) => format!(" pool{pool}"),
        (true, PoolConnection::Shared) => format!(" pool{pool} shared-conn"),
    }
}

/// A short label of a run, for the progress bar and plots.
pub fn label(config: &QueueRunConfig) -> String {
    let variant = match config.system {
        System::Booblik | System::ClaimsOnJetstream => format!(
            " {} {}{}",
            config.pick.name(),
            if config.claim_ack == Ack::Forced {
                "forced"
            } else {
                "written"
            },
            pool_suffix(config.pool as u64, config.pool_connection)
        ),
        System::Peer(_) => String::new(),
    };
    format!(
        "queue {} {}w{variant} {}{} #{}",
        config.system.name(),
        config.workers,
        config.arrival.name(),
        config
            .chaos
            .map_or(String::new(), |c| format!(" {}", c.mode.name())),
        config.repetition + 1,
    )
}

pub use report::markdown;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_done_riding_with_the_next_claim_leaves_one_round_trip_per_task_in_the_ceiling() {
        // 30 workers, 10 ms of work, claims of 1 ms at p50.
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(
            ceiling_tasks_per_s(30, 10, 1.0, true),
            30_000.0 / 11.0
        ));
        assert!(close(
            ceiling_tasks_per_s(30, 10, 1.0, false),
            30_000.0 / 12.0
        ));
    }
}
