//! The chaos monkey: kills workers in the middle of a task.
//!
//! A kill aborts the worker's `run` future and drops the worker, which stops its followers: the
//! process-crash case as far as the protocol can tell (no done, no further extends, connections
//! closed). Only workers whose events say they are working — `WorkStarted` without a later
//! `DoneAppended` or `LeaseLost` — are chosen, so every kill strands a leased task. The task
//! must then be claimed again after its lease expires (a duplicate execution), and still be
//! completed exactly once.
//!
//! One wave: once a given share of the tasks is finished, the monkey kills `⌈share × workers⌉`
//! workers, as many at a time as are working, until it has killed that many.

use super::ChaosConfig;

/// The monkey's plan for one run.
#[derive(Debug, Clone)]
pub struct ChaosPlan {
    config: ChaosConfig,
    victims_wanted: usize,
    killed: usize,
}

impl ChaosPlan {
    /// A plan against `workers` workers.
    pub fn new(config: ChaosConfig, workers: usize) -> Self {
        let victims_wanted = ((config.share * workers as f64).ceil() as usize).clamp(1, workers);
        Self {
            config,
            victims_wanted,
            killed: 0,
        }
    }

    /// Whether to start replacements.
    pub fn replaces(&self) -> bool {
        self.config.replace
    }

    /// Workers killed so far.
    pub fn killed(&self) -> usize {
        self.killed
    }

    /// Which of the `working` slots to kill now, given how many of `total` tasks are finished.
    pub fn victims(&mut self, finished: usize, total: usize, working: &[usize]) -> Vec<usize> {
        let started = finished as f64 >= self.config.after_finished_share * total as f64;
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
    fn at_least_one_worker_is_killed() {
        let mut p = plan(0.01, 3);
        assert_eq!(p.victims(10, 10, &[2]), vec![2]);
    }
}
