//! The chaos monkey: kills (`crash`) or freezes (`stall`) workers in the middle of a task.
//!
//! **Crash.** A kill aborts the worker's `run` future and drops the worker, which stops its followers: the
//! process-crash case as far as the protocol can tell (no done, no further extends, connections
//! closed). Only workers whose events say they are working — `WorkStarted` without a later
//! `DoneAppended` or `LeaseLost` — are chosen, so every kill strands a leased task. The task
//! must then be claimed again after its lease expires (a duplicate execution), and still be
//! completed exactly once.
//!
//! One wave: once a given share of the tasks is finished, the monkey kills `⌈share × workers⌉`
//! workers, as many at a time as are working, until it has killed that many.
//!
//! **Stall.** The victim's work function blocks its OS thread (`std::thread::sleep`) for
//! 1.5 × the lease at the end of its work, before it commits its effect: the worker runs on a
//! thread and runtime of its own ([`super::thread`]), so its followers, lease timer and
//! connections freeze with it and it cannot see the time pass. Then it commits its effect and
//! its done as if nothing had happened. Its lease lapses meanwhile and another worker takes the
//! task over; that holder fences the effect sink when its work starts, so the late effect is
//! refused (booblik) — or lands a second time (the peers' sink cannot fence).
//!
//! The stall wave starts late, when at most [`STALL_WHEN_UNFINISHED_PER_WORKER`] × workers
//! tasks are unfinished: the other workers are then idle when the lease lapses and one takes it
//! over at once, well within the half lease the stall lasts beyond it. Early in a deep random
//! backlog the lapsed task is one candidate among hundreds and is often not picked again before
//! the stalled worker wakes; its late effect then counts (its token is still the newest) and
//! nothing is taken over — a stall nobody noticed, which measures nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use super::{ChaosConfig, ChaosMode, STALL_LEASES_X10, STALL_WHEN_UNFINISHED_PER_WORKER};

/// The stalls of one run: how long one lasts, and how many began and ended. Clones share the
/// counts; every worker's work function holds one.
#[derive(Debug, Clone)]
pub struct Stalls {
    freeze: Duration,
    started: Arc<AtomicU64>,
    ended: Arc<AtomicU64>,
}

impl Stalls {
    /// Stalls of 1.5 × `lease_ms`.
    pub fn new(lease_ms: u64) -> Self {
        Self {
            freeze: Duration::from_millis(lease_ms * STALL_LEASES_X10 / 10),
            started: Arc::default(),
            ended: Arc::default(),
        }
    }

    /// Called by a work function before it commits its effect: if the monkey flipped `switch`,
    /// blocks this OS thread for the stall — the worker's whole runtime freezes with it, and it
    /// cannot tell — and clears the switch.
    pub fn freeze_if_asked(&self, switch: &AtomicBool) {
        if switch.swap(false, Ordering::SeqCst) {
            self.started.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(self.freeze);
            self.ended.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Stalls begun.
    pub fn started(&self) -> u64 {
        self.started.load(Ordering::SeqCst)
    }

    /// Every stall begun has ended.
    pub fn all_ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst) == self.started()
    }
}

/// The monkey's plan for one run.
#[derive(Debug, Clone)]
pub struct ChaosPlan {
    config: ChaosConfig,
    workers: usize,
    victims_wanted: usize,
    killed: usize,
}

impl ChaosPlan {
    /// A plan against `workers` workers.
    pub fn new(config: ChaosConfig, workers: usize) -> Self {
        let victims_wanted = ((config.share * workers as f64).ceil() as usize).clamp(1, workers);
        Self {
            config,
            workers,
            victims_wanted,
            killed: 0,
        }
    }

    /// Whether to start replacements.
    pub fn replaces(&self) -> bool {
        self.config.mode == ChaosMode::Crash && self.config.replace
    }

    /// Crash or stall.
    pub fn mode(&self) -> ChaosMode {
        self.config.mode
    }

    /// Workers hit so far.
    pub fn killed(&self) -> usize {
        self.killed
    }

    /// Which of the `working` slots to kill now, given how many of `total` tasks are finished.
    pub fn victims(&mut self, finished: usize, total: usize, working: &[usize]) -> Vec<usize> {
        let started = match self.config.mode {
            ChaosMode::Crash => finished as f64 >= self.config.after_finished_share * total as f64,
            ChaosMode::Stall => {
                total.saturating_sub(finished) <= STALL_WHEN_UNFINISHED_PER_WORKER * self.workers
            }
        };
        if !started || self.killed >= self.victims_wanted {
            return Vec::new();
        }
        let now: Vec<usize> = working
            .iter()
            .copied()
            .take(self.victims_wanted - self.killed)
            .collect();
        self.killed += now.len();
        now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(share: f64, workers: usize) -> ChaosPlan {
        ChaosPlan::new(
            ChaosConfig {
                mode: ChaosMode::Crash,
                share,
                after_finished_share: 0.5,
                replace: true,
            },
            workers,
        )
    }

    #[test]
    fn nobody_is_killed_before_the_wave_starts() {
        let mut p = plan(0.5, 4);
        assert!(p.victims(1, 10, &[0, 1, 2]).is_empty());
    }

    #[test]
    fn the_wave_kills_working_workers_until_the_share_is_reached() {
        let mut p = plan(0.5, 4);
        assert_eq!(p.victims(5, 10, &[3]), vec![3]);
        assert_eq!(p.victims(6, 10, &[0, 1, 2]), vec![0]);
        assert!(p.victims(7, 10, &[1, 2]).is_empty());
        assert_eq!(p.killed(), 2);
    }

    #[test]
    fn a_stall_wave_waits_until_few_tasks_are_left() {
        let mut p = ChaosPlan::new(
            ChaosConfig {
                mode: ChaosMode::Stall,
                share: 0.34,
                after_finished_share: 0.3,
                replace: true,
            },
            3,
        );
        assert!(p.victims(50, 100, &[0, 1, 2]).is_empty());
        assert_eq!(p.victims(94, 100, &[0, 1, 2]), vec![0, 1]);
        assert!(!p.replaces());
    }

    #[test]
    fn at_least_one_worker_is_killed() {
        let mut p = plan(0.01, 3);
        assert_eq!(p.victims(10, 10, &[2]), vec![2]);
    }
}
