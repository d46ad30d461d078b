//! The experiment's targets, checked against a report: which are met, with the measured value
//! beside each, so the documents can say so plainly.
//!
//! A target whose runs were not part of the report is listed as "not measured", never as met.

use crate::ack::Ack;
use crate::fetch::Reader;
use crate::produce::ClientPath;
use crate::queue::{Arrival, PickArg, QueueRun};
use crate::report::{Report, Run};
use std::fmt::Write as _;

/// One target and how it fared.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// What was promised.
    pub target: String,
    /// What was measured.
    pub measured: String,
    /// `Some(true)` met, `Some(false)` missed, `None` not measured.
    pub met: Option<bool>,
}

/// The booblik run (first repetition) these targets were set for: random, backlog, `written`
/// claims, no chaos. The issue-19 comparison with the peers is the queue report's peer table.
fn the_run(report: &Report, workers: usize) -> Option<&QueueRun> {
    report.runs.iter().filter_map(Run::as_queue).find(|r| {
        r.system == "booblik"
            && r.workers == workers
            && r.pick == Some(PickArg::Random)
            && r.arrival == Arrival::Backlog
            && r.claim_ack == Some(Ack::Written)
            && r.chaos.is_none()
    })
}

fn verdict(target: &str, measured: Option<(String, bool)>) -> Verdict {
    match measured {
        Some((measured, met)) => Verdict {
            target: target.to_owned(),
            measured,
            met: Some(met),
        },
        None => Verdict {
            target: target.to_owned(),
            measured: "not measured".to_owned(),
            met: None,
        },
    }
}

/// Every target against `report`.
pub fn evaluate(report: &Report) -> Vec<Verdict> {
    let rtt = report.baseline.rtt_us_p50;
    let tcp = report.baseline.tcp_mb_s;
    let mut out = Vec::new();
    let three = the_run(report, 3);
    out.push(verdict(
        "3 workers, random, backlog: claim p50 ≤ 4 × loopback RTT p50",
        three.map(|r| {
            (
                format!(
                    "{:.0} µs = {:.1} × RTT ({rtt:.1} µs); {:.1} × the one-thread RTT ({:.1} µs); \
                     {:.1} × the RTT after 2 ms idle ({:.1} µs)",
                    r.claim_latency_us.p50,
                    r.vs_baseline.claim_p50_over_rtt_p50,
                    r.vs_baseline.claim_p50_over_rtt_same_thread_p50,
                    report.baseline.rtt_same_thread_us_p50,
                    r.claim_latency_us.p50 / report.baseline.rtt_after_idle_us_p50,
                    report.baseline.rtt_after_idle_us_p50,
                ),
                r.claim_latency_us.p50 <= 4.0 * rtt,
            )
        }),
    ));
    out.push(verdict(
        "3 workers, random, backlog: claim p99 ≤ 1 ms",
        three.map(|r| {
            (
                format!("{:.0} µs", r.claim_latency_us.p99),
                r.claim_latency_us.p99 <= 1_000.0,
            )
        }),
    ));
    out.push(verdict(
        "3 workers, random, backlog: lost races ≤ 1 %",
        three.map(|r| (format!("{:.2} %", r.lost_race_pct), r.lost_race_pct <= 1.0)),
    ));
    let thirty = the_run(report, 30);
    out.push(verdict(
        "30 workers, random, backlog: claim p99 ≤ 5 ms",
        thirty.map(|r| {
            (
                format!("{:.0} µs", r.claim_latency_us.p99),
                r.claim_latency_us.p99 <= 5_000.0,
            )
        }),
    ));
    out.push(verdict(
        "30 workers, random, backlog: lost races ≤ 2 %",
        thirty.map(|r| (format!("{:.2} %", r.lost_race_pct), r.lost_race_pct <= 2.0)),
    ));
    let queue: Vec<&QueueRun> = report
        .runs
        .iter()
        .filter_map(Run::as_queue)
        .filter(|r| r.system == "booblik")
        .collect();
    let some_queue = (!queue.is_empty()).then_some(());
    out.push(verdict(
        "every booblik queue run (chaos included): zero tasks never completed",
        some_queue.map(|()| {
            let never: u64 = queue.iter().map(|r| r.tasks_never_completed).sum();
            (format!("{never} in {} runs", queue.len()), never == 0)
        }),
    ));
    out.push(verdict(
        "every booblik queue run (chaos included): zero duplicate effects, zero violations",
        some_queue.map(|()| {
            let dup: u64 = queue
                .iter()
                .map(|r| r.duplicate_effects + r.duplicate_dones)
                .sum();
            let violations: u64 = queue.iter().map(|r| r.violations).sum();
            (
                format!("{dup} duplicate effects, {violations} violations"),
                dup == 0 && violations == 0,
            )
        }),
    ));
    let best_produce = report
        .runs
        .iter()
        .filter_map(|r| match r {
            Run::Produce(p)
                if p.record_bytes == 100
                    && p.ack == Ack::Written
                    && p.client == ClientPath::Producer =>
            {
                Some(p)
            }
            _ => None,
        })
        .max_by(|a, b| a.records_per_s.total_cmp(&b.records_per_s));
    out.push(verdict(
        "produce ≥ 2 M records/s of 100 B, batching Producer, ack = written",
        best_produce.map(|p| {
            (
                format!(
                    "{:.2} M records/s ({} producers)",
                    p.records_per_s / 1e6,
                    p.producers
                ),
                p.records_per_s >= 2e6,
            )
        }),
    ));
    let zero_copy = report.runs.iter().find_map(|r| match r {
        Run::Fetch(f) if f.mode == "zero-copy" && f.reader == Reader::Raw => Some(f),
        _ => None,
    });
    out.push(verdict(
        "zero-copy fetch ≥ 70 % of raw loopback TCP throughput",
        zero_copy.map(|f| {
            // Judged against the TCP figure measured beside the fetch rounds: the same minutes,
            // the same load. The baseline's figure is shown too.
            let ratio = f.vs_baseline.mb_s_over_adjacent_tcp_mb_s;
            (
                format!(
                    "{:.0} MB/s = {:.0} % of the baseline's {tcp:.0} MB/s, {:.0} % of the adjacent {:.0} MB/s",
                    f.mb_s,
                    100.0 * f.vs_baseline.mb_s_over_tcp_mb_s,
                    100.0 * f.vs_baseline.mb_s_over_adjacent_tcp_mb_s,
                    f.adjacent_tcp_mb_s,
                ),
                ratio >= 0.7,
            )
        }),
    ));
    out
}

/// The verdicts as a markdown table.
pub fn markdown(verdicts: &[Verdict]) -> String {
    let mut out = String::from("| target | measured | met? |\n|---|---|---|\n");
    for v in verdicts {
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            v.target,
            v.measured,
            match v.met {
                Some(true) => "**met**",
                Some(false) => "**missed**",
                None => "—",
            }
        );
    }
    out
}
