//! The report of one invocation: the machine, the baseline measured in the same invocation,
//! and every run — printed as markdown on stdout and optionally written as JSON
//! (`{"machine": …, "baseline": {…}, "runs": [{"kind": …, …}, …]}`).

use std::path::Path;

use anyhow::Context;
use serde::Serialize;

use crate::baseline::Baseline;
use crate::e2e::E2eRun;
use crate::fetch::FetchRun;
use crate::machine::Machine;
use crate::produce::ProduceRun;
use crate::queue::QueueRun;
use crate::requests::RequestsRun;
use crate::soak::SoakRun;

/// One measured run, tagged with its workload (`"kind"` in JSON).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Run {
    /// A task-queue run.
    Queue(Box<QueueRun>),
    /// A produce run.
    Produce(ProduceRun),
    /// A fetch run.
    Fetch(FetchRun),
    /// An end-to-end latency run.
    E2e(E2eRun),
    /// Request round trips, one at a time.
    Requests(RequestsRun),
    /// A soak.
    Soak(SoakRun),
}

/// Everything one invocation measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The machine.
    pub machine: Machine,
    /// The machine's floor, measured first.
    pub baseline: Baseline,
    /// The runs, in the order they ran.
    pub runs: Vec<Run>,
}

impl Report {
    /// The whole report as markdown: machine, baseline, one table per workload.
    pub fn markdown(&self) -> String {
        let b = &self.baseline;
        let mut out = format!(
            "# booblik-load\n\nMachine: {}\n\n## Baseline\n\n\
             | loopback RTT p50 µs | RTT p99 µs | RTT one thread p50 µs | RTT after 2 ms idle p50 µs | TCP MB/s | fsync p50 µs | fsync p99 µs | page-cache write MB/s | TCP into the page cache MB/s, after a pause / back to back |\n\
             |---:|---:|---:|---:|---:|---:|---:|---:|---:|\n\
             | {:.1} | {:.1} | {:.1} | {:.1} | {:.0} | {:.0} | {:.0} | {:.0} | {} / {} |\n",
            self.machine.describe(),
            b.rtt_us_p50,
            b.rtt_us_p99,
            b.rtt_same_thread_us_p50,
            b.rtt_after_idle_us_p50,
            b.tcp_mb_s,
            b.fsync_us_p50,
            b.fsync_us_p99,
            b.page_cache_write_mb_s,
            figure(b.tcp_store_after_pause_mb_s, 0),
            figure(b.tcp_store_mb_s, 0),
        );
        let queue: Vec<&QueueRun> = self.runs.iter().filter_map(Run::as_queue).collect();
        if !queue.is_empty() {
            out.push_str("\n## Task queue\n\n");
            out.push_str(&crate::queue::markdown(&queue, b));
        }
        let produce: Vec<&ProduceRun> = self
            .runs
            .iter()
            .filter_map(|r| match r {
                Run::Produce(p) => Some(p),
                _ => None,
            })
            .collect();
        if !produce.is_empty() {
            out.push_str("\n## Produce\n\n");
            out.push_str(&crate::produce::markdown(&produce, b));
        }
        let fetch: Vec<&FetchRun> = self
            .runs
            .iter()
            .filter_map(|r| match r {
                Run::Fetch(f) => Some(f),
                _ => None,
            })
            .collect();
        if !fetch.is_empty() {
            out.push_str("\n## Fetch\n\n");
            out.push_str(&crate::fetch::markdown(&fetch, b));
        }
        for run in &self.runs {
            if let Run::Requests(r) = run {
                out.push_str("\n## Request round trips\n\n");
                out.push_str(&crate::requests::markdown(r, b));
            }
        }
        let e2e: Vec<&E2eRun> = self
            .runs
            .iter()
            .filter_map(|r| match r {
                Run::E2e(e) => Some(e),
                _ => None,
            })
            .collect();
        if !e2e.is_empty() {
            out.push_str("\n## End-to-end latency\n\n");
            out.push_str(&crate::e2e::markdown(&e2e, b));
        }
        let soak: Vec<&SoakRun> = self
            .runs
            .iter()
            .filter_map(|r| match r {
                Run::Soak(s) => Some(s),
                _ => None,
            })
            .collect();
        if !soak.is_empty() {
            out.push_str("\n## Soak\n\n");
            out.push_str(&crate::soak::markdown(&soak));
        }
        out
    }

    /// Writes the report as pretty JSON.
    pub fn write_json(&self, path: &Path) -> anyhow::Result<()> {
        if let Some(parent) = path.parent()
            && !parent.as_os_str().is_empty()
        {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let json = serde_json::to_string_pretty(self)?;
        std::fs::write(path, json + "\n").with_context(|| format!("writing {}", path.display()))
    }
}

/// `value` with `decimals` decimals, or "—" where it was not measured (NaN): a probe that was
/// switched off shows as a dash, not as "NaN".
pub fn figure(value: f64, decimals: usize) -> String {
    if value.is_finite() {
        format!("{value:.decimals$}")
    } else {
        "—".to_owned()
    }
}

impl Run {
    /// The queue run inside, if this is one.
    pub fn as_queue(&self) -> Option<&QueueRun> {
        match self {
            Run::Queue(q) => Some(q),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::figure;

    #[test]
    fn a_figure_that_was_not_measured_shows_as_a_dash_not_as_nan() {
        assert_eq!(figure(f64::NAN, 3), "—");
        assert_eq!(figure(0.25, 3), "0.250");
        assert_eq!(figure(941.6, 0), "942");
    }
}
