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

/// Durable peers the queue's FORCED claims are judged against (issue 19).
const DURABLE_PEERS: [&str; 2] = ["redis-fsync", "postgres"];

/// The median of `figure` over `runs` (a variant's repetitions).
fn median_of(runs: &[&QueueRun], figure: impl Fn(&QueueRun) -> f64) -> f64 {
    crate::queue::report::median(&runs.iter().map(|r| figure(r)).collect::<Vec<_>>())
}

/// Issue 19's targets, per backlog scenario without chaos that has durable peers: each booblik
/// FORCED variant with the random pick (independent, pooled, pooled on one connection) against
/// the peers' medians over the repetitions — claim p50 and p99 no higher than either peer's,
/// tasks/s no lower than redis-fsync's — and, at 3 workers, claim p50 ≤ 1.5 × (loopback RTT p50
/// + fsync p50) of the invocation.
fn against_the_peers(report: &Report, out: &mut Vec<Verdict>) {
    let queue: Vec<&QueueRun> = report.runs.iter().filter_map(Run::as_queue).collect();
    let floor_us = 1.5 * (report.baseline.rtt_us_p50 + report.baseline.fsync_us_p50);
    let mut scenarios: Vec<(usize, u64)> = Vec::new();
    for r in &queue {
        let key = (r.workers, r.work_ms);
        if r.arrival == Arrival::Backlog && r.chaos.is_none() && !scenarios.contains(&key) {
            scenarios.push(key);
        }
    }
    for (workers, work_ms) in scenarios {
        let of = |system: &str| -> Vec<&QueueRun> {
            queue
                .iter()
                .copied()
                .filter(|r| {
                    r.system == system
                        && r.workers == workers
                        && r.work_ms == work_ms
                        && r.arrival == Arrival::Backlog
                        && r.chaos.is_none()
                        && r.claim_latency_samples > 0
                })
                .collect()
        };
        let peers: Vec<(&str, Vec<&QueueRun>)> = DURABLE_PEERS
            .iter()
            .map(|name| (*name, of(name)))
            .filter(|(_, runs)| !runs.is_empty())
            .collect();
        if peers.is_empty() {
            continue;
        }
        let booblik: Vec<&QueueRun> = of("booblik")
            .into_iter()
            .filter(|r| r.claim_ack == Some(Ack::Forced) && r.pick == Some(PickArg::Random))
            .collect();
        let mut variants: Vec<String> = Vec::new();
        for r in &booblik {
            let v = crate::queue::report::variant(r);
            if !variants.contains(&v) {
                variants.push(v);
            }
        }
        for variant in variants {
            let mine: Vec<&QueueRun> = booblik
                .iter()
                .copied()
                .filter(|r| crate::queue::report::variant(r) == variant)
                .collect();
            let (p50, p99) = (
                median_of(&mine, |r| r.claim_latency_us.p50),
                median_of(&mine, |r| r.claim_latency_us.p99),
            );
            let scenario = format!("{workers} workers, backlog, {work_ms} ms work, {variant}");
            let mut measured = format!("claim p50 / p99 {p50:.0} / {p99:.0} µs");
            let mut met = true;
            for (name, runs) in &peers {
                let (peer_p50, peer_p99) = (
                    median_of(runs, |r| r.claim_latency_us.p50),
                    median_of(runs, |r| r.claim_latency_us.p99),
                );
                let _ = write!(measured, "; {name} {peer_p50:.0} / {peer_p99:.0}");
                met &= p50 <= peer_p50 && p99 <= peer_p99;
            }
            out.push(Verdict {
                target: format!(
                    "{scenario}: claim p50 and p99 ≤ every durable peer's (medians of the repetitions)"
                ),
                measured,
                met: Some(met),
            });
            if let Some((_, redis)) = peers.iter().find(|(name, _)| *name == "redis-fsync") {
                let (tps, peer_tps) = (
                    median_of(&mine, |r| r.tasks_per_s),
                    median_of(redis, |r| r.tasks_per_s),
                );
                out.push(Verdict {
                    target: format!("{scenario}: tasks/s ≥ redis-fsync's"),
                    measured: format!("{tps:.0} against {peer_tps:.0}"),
                    met: Some(tps >= peer_tps),
                });
            }
            if workers == 3 {
                out.push(Verdict {
                    target: format!("{scenario}: claim p50 ≤ 1.5 × (loopback RTT p50 + fsync p50)"),
                    measured: format!(
                        "{p50:.0} µs = {:.2} × that floor ({floor_us:.0} µs)",
                        p50 / floor_us
                    ),
                    met: Some(p50 <= floor_us),
                });
            }
        }
    }
}

/// Every target against `report`.
pub fn evaluate(report: &Report) -> Vec<Verdict> {
    let rtt = report.baseline.rtt_us_p50;
    let tcp = report.baseline.tcp_mb_s;
    let mut out = Vec::new();
    against_the_peers(report, &mut out);
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
