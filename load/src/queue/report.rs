//! The queue results as markdown: the peer table first — booblik and its peers side by side per
//! scenario, medians of the repetitions with their min–max, and each figure as a ratio to the
//! best durable peer of the same invocation — then every run on its own.

use std::fmt::Write as _;

use super::{Arrival, ChaosMode, QueueRun};
use crate::ack::Ack;
use crate::baseline::Baseline;

/// p99.9 is printed only from at least this many samples (per run): below it, the p99.9 is one
/// of the few largest samples.
pub const MIN_SAMPLES_FOR_P999: u64 = 10_000;

/// What a table row compares: one scenario.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scenario {
    /// Workers.
    pub workers: usize,
    /// Arrival.
    pub arrival: Arrival,
    /// Chaos.
    pub chaos: Option<ChaosMode>,
    /// Work per task.
    pub work_ms: u64,
}

impl Scenario {
    /// The scenario of a run.
    pub fn of(run: &QueueRun) -> Self {
        Self {
            workers: run.workers,
            arrival: run.arrival,
            chaos: run.chaos,
            work_ms: run.work_ms,
        }
    }

    /// A heading.
    pub fn title(&self) -> String {
        format!(
            "{} workers, {}, {} ms work{}",
            self.workers,
            self.arrival.name(),
            self.work_ms,
            self.chaos
                .map_or(String::new(), |c| format!(", chaos {}", c.name()))
        )
    }
}

/// A system in one setting: booblik with its pick and ack, or a peer.
pub fn variant(run: &QueueRun) -> String {
    match (run.pick, run.claim_ack) {
        (Some(pick), Some(ack)) => format!(
            "{} {} {}{}",
            run.system,
            ack.name(),
            pick.name(),
            super::pool_suffix(run.pool, run.pool_connection)
        ),
        _ => run.system.to_owned(),
    }
}

/// The median of `values` (the mean of the middle two for an even count).
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => f64::midpoint(sorted[n / 2 - 1], sorted[n / 2]),
    }
}

/// Median, min and max of one figure over a variant's repetitions.
#[derive(Debug, Clone, Copy)]
pub struct Spread {
    /// Median.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    /// Over `values`.
    pub fn of(values: &[f64]) -> Self {
        Self {
            median: median(values),
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }

    fn show(&self, decimals: usize) -> String {
        if !self.median.is_finite() {
            // No run had a value (no latency samples): nothing to show, not a zero.
            return "—".to_owned();
        }
        // A spread that does not show at this precision is not printed.
        let (min, max) = (
            format!("{:.*}", decimals, self.min),
            format!("{:.*}", decimals, self.max),
        );
        if min == max {
            format!("{:.*}", decimals, self.median)
        } else {
            format!("{:.*} ({min}–{max})", decimals, self.median)
        }
    }
}

/// A variant's runs in one scenario, summarised.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The variant's name.
    pub variant: String,
    /// Whether it is a durable peer (the headline's reference).
    pub durable_peer: bool,
    /// Repetitions.
    pub runs: usize,
    /// Repetitions with at least one claim-latency sample: the latency figures are over these.
    /// A peer's idle worker blocks in its claim until a task arrives, and such a claim measures
    /// the wait, so a trickle can leave a peer's run with none.
    pub latency_runs: usize,
    /// Claim p50, µs.
    pub p50: Spread,
    /// Claim p99, µs.
    pub p99: Spread,
    /// Claim p99.9, µs, when every run had enough samples.
    pub p999: Option<Spread>,
    /// Tasks per second.
    pub tasks_per_s: Spread,
    /// Lost races, %.
    pub lost_pct: Spread,
    /// Enqueue → won p50, µs.
    pub enqueue_p50: Spread,
    /// Sums over the repetitions.
    pub never_completed: u64,
    /// Duplicate effects, summed.
    pub duplicate_effects: u64,
    /// Refused effects, summed.
    pub refused_effects: u64,
    /// Fenced dones, summed.
    pub fenced_dones: u64,
}

fn summarise(variant: String, runs: &[&QueueRun]) -> Summary {
    let figure =
        |f: &dyn Fn(&QueueRun) -> f64| Spread::of(&runs.iter().map(|r| f(r)).collect::<Vec<_>>());
    let sampled: Vec<&&QueueRun> = runs
        .iter()
        .filter(|r| r.claim_latency_samples > 0)
        .collect();
    let latency = |f: &dyn Fn(&QueueRun) -> f64| {
        Spread::of(&sampled.iter().map(|r| f(r)).collect::<Vec<_>>())
    };
    Summary {
        latency_runs: sampled.len(),
        durable_peer: runs.iter().all(|r| {
            super::peers::Peer::from_name(r.system).is_some_and(super::peers::Peer::durable)
        }),
        runs: runs.len(),
        p50: latency(&|r| r.claim_latency_us.p50),
        p99: latency(&|r| r.claim_latency_us.p99),
        p999: runs
            .iter()
            .all(|r| r.claim_latency_samples >= MIN_SAMPLES_FOR_P999)
            .then(|| figure(&|r| r.claim_latency_us.p999)),
        tasks_per_s: figure(&|r| r.tasks_per_s),
        lost_pct: figure(&|r| r.lost_race_pct),
        enqueue_p50: figure(&|r| r.enqueue_to_claim_us.p50),
        never_completed: runs.iter().map(|r| r.tasks_never_completed).sum(),
        duplicate_effects: runs.iter().map(|r| r.duplicate_effects).sum(),
        refused_effects: runs.iter().map(|r| r.refused_effects).sum(),
        fenced_dones: runs.iter().map(|r| r.fenced_dones).sum(),
        variant,
    }
}

/// The scenarios of `runs`, in first-run order, each with its variants' summaries (in first-run
/// order).
pub fn summaries(runs: &[&QueueRun]) -> Vec<(Scenario, Vec<Summary>)> {
    let mut scenarios: Vec<Scenario> = Vec::new();
    for run in runs {
        let scenario = Scenario::of(run);
        if !scenarios.contains(&scenario) {
            scenarios.push(scenario);
        }
    }
    scenarios
        .into_iter()
        .map(|scenario| {
            let mine: Vec<&QueueRun> = runs
                .iter()
                .copied()
                .filter(|r| Scenario::of(r) == scenario)
                .collect();
            let mut variants: Vec<String> = Vec::new();
            for run in &mine {
                let v = variant(run);
                if !variants.contains(&v) {
                    variants.push(v);
                }
            }
            let summaries = variants
                .into_iter()
                .map(|v| {
                    let of_variant: Vec<&QueueRun> =
                        mine.iter().copied().filter(|r| variant(r) == v).collect();
                    summarise(v, &of_variant)
                })
                .collect();
            (scenario, summaries)
        })
        .collect()
}

fn ratio(value: f64, reference: Option<f64>) -> String {
    match reference {
        Some(reference) if reference > 0.0 && value.is_finite() => {
            format!("{:.2}", value / reference)
        }
        _ => "—".to_owned(),
    }
}

/// The peer table: per scenario, every variant's medians (min–max over the repetitions) and
/// ratios to the best durable peer's median (lowest latency, highest throughput).
pub fn peer_table(runs: &[&QueueRun], baseline: &Baseline) -> String {
    let mut out = String::from(
        "Medians over the repetitions, min–max in brackets. Claim latency in µs (warm-up \
         excluded), from issuing the claim to knowing it won. \"÷ durable\": the figure over the \
         best durable peer's median in the same scenario (redis-fsync or postgres: lowest \
         latency, highest tasks/s); below 1 is better for latency, above 1 for tasks/s. p99.9 is \
         shown only when every run had at least 10 000 claims. \"[k of n runs]\": only k runs had \
         latency samples (a peer's idle worker blocks in its claim until a task arrives, and such \
         a claim measures the wait, so it is left out); \"—\": none had.",
    );
    out.push_str(if runs.iter().all(|run| run.done_with_next_claim) {
        " Every worker sent a finished task's done with its next claim, in one round trip \
         (booblik: one batch; Redis: one pipeline; PostgreSQL: one statement; JetStream: sent \
         together).\n"
    } else if runs.iter().all(|run| !run.done_with_next_claim) {
        " Every worker sent each done on its own and waited for it before its next claim \
         (`--separate-dones`).\n"
    } else {
        "\n"
    });
    for (scenario, summaries) in summaries(runs) {
        let durable: Vec<&Summary> = summaries.iter().filter(|s| s.durable_peer).collect();
        let best = |f: &dyn Fn(&Summary) -> f64, lowest: bool| {
            durable
                .iter()
                .map(|s| f(s))
                .filter(|v| v.is_finite() && *v > 0.0)
                .reduce(|a, b| if (a < b) == lowest { a } else { b })
        };
        let best_p50 = best(&|s| s.p50.median, true);
        let best_p99 = best(&|s| s.p99.median, true);
        let best_tps = best(&|s| s.tasks_per_s.median, false);
        let _ = write!(
            out,
            "\n**{}**\n\n\
             | system | runs | claim p50 | claim p99 | p99.9 | tasks/s | lost % | enqueue → won p50 | p50 ÷ durable | p99 ÷ durable | tasks/s ÷ durable | p50 ÷ RTT | never completed | fenced dones | refused effects | duplicate effects |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
            scenario.title()
        );
        for s in &summaries {
            let partial = if s.latency_runs < s.runs && s.latency_runs > 0 {
                format!(" [{} of {} runs]", s.latency_runs, s.runs)
            } else {
                String::new()
            };
            let over_rtt = s.p50.median / baseline.rtt_us_p50;
            let _ = writeln!(
                out,
                "| {} | {} | {}{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                s.variant,
                s.runs,
                s.p50.show(0),
                partial,
                s.p99.show(0),
                s.p999.map_or_else(|| "—".to_owned(), |p| p.show(0)),
                s.tasks_per_s.show(0),
                s.lost_pct.show(2),
                s.enqueue_p50.show(0),
                ratio(s.p50.median, best_p50),
                ratio(s.p99.median, best_p99),
                ratio(s.tasks_per_s.median, best_tps),
                if over_rtt.is_finite() {
                    format!("{over_rtt:.1}")
                } else {
                    "—".to_owned()
                },
                s.never_completed,
                s.fenced_dones,
                s.refused_effects,
                s.duplicate_effects,
            );
        }
    }
    out
}

/// The queue results: the peer table, then every run's latency and work.
pub fn markdown(runs: &[&QueueRun], baseline: &Baseline) -> String {
    let name = |r: &QueueRun| {
        format!(
            "{} | {} | {} | {} | {} | {} | {}",
            r.system,
            r.repetition + 1,
            r.workers,
            r.pick.map_or("—", |p| p.name()),
            r.arrival.name(),
            r.claim_ack.map_or("—", Ack::name),
            r.chaos.map_or("—", ChaosMode::name),
        )
    };
    let mut out = String::from("### Booblik and its peers\n\n");
    out.push_str(&peer_table(runs, baseline));
    out.push_str(
        "\n### Every run\n\nClaim latency, µs (each worker's first claims are a warm-up and left out):\n\n\
         | system | rep. | workers | pick | arrival | ack | chaos | claims | warm-up | p50 | p90 | p99 | p99.9 | max | p50 ÷ RTT | p50 ÷ one-thread RTT | p99 ÷ RTT | enqueue → won p50 | enqueue → won p99 |\n\
         |---|---:|---:|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in runs {
        let l = r.claim_latency_us;
        // A run without samples has no latency to show: print "—", never a zero.
        let sampled = r.claim_latency_samples > 0;
        let us = |v: f64| {
            if sampled {
                format!("{v:.0}")
            } else {
                "—".to_owned()
            }
        };
        let x = |v: f64| {
            if sampled {
                format!("{v:.1}")
            } else {
                "—".to_owned()
            }
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} | {:.0} |",
            name(r),
            r.claim_latency_samples,
            r.warmup_claims_discarded,
            us(l.p50),
            us(l.p90),
            us(l.p99),
            if r.claim_latency_samples >= MIN_SAMPLES_FOR_P999 {
                format!("{:.0}", l.p999)
            } else {
                "—".to_owned()
            },
            us(l.max),
            x(r.vs_baseline.claim_p50_over_rtt_p50),
            x(r.vs_baseline.claim_p50_over_rtt_same_thread_p50),
            x(r.vs_baseline.claim_p99_over_rtt_p50),
            r.enqueue_to_claim_us.p50,
            r.enqueue_to_claim_us.p99,
        );
    }
    out.push_str(
        "\nWork (booblik: from the verifier over both logs; peers: from the server and the workers' replies):\n\n\
         | system | rep. | workers | pick | arrival | ack | chaos | tasks | completed | never | dead | attempts | wins | lost | lost % | lost % deep backlog | empty claims | dup. exec. | expired | fenced dones | effects | dup. effects | refused effects | dup. dones | violations | killed | stalled | tasks/s | ceiling | % of ceiling | CPU s |\n\
         |---|---:|---:|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in runs {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {:.2} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} | {:.0} | {:.0} | {:.1} |",
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
            r.empty_claims
                .map_or_else(|| "—".to_owned(), |n| n.to_string()),
            r.duplicate_executions,
            r.expired_leases,
            r.fenced_dones,
            r.effects_committed,
            r.duplicate_effects,
            r.refused_effects,
            r.duplicate_dones,
            r.violations,
            r.workers_killed,
            r.workers_stalled,
            r.tasks_per_s,
            r.ceiling_tasks_per_s,
            100.0 * r.tasks_per_s / r.ceiling_tasks_per_s.max(f64::MIN_POSITIVE),
            r.process_cpu_s,
        );
    }
    let _ = writeln!(
        out,
        "\nLoopback RTT p50 (baseline): {:.1} µs (one thread: {:.1} µs); fsync p50: {:.0} µs. \
         Ceiling = workers × 1000 / (work_ms + claim p50 ms), with 2 × claim p50 when dones go on their own (`--separate-dones`), capped by the arrival rate for a trickle. \
         \"Deep backlog\": claims appended while at least 2 × workers tasks had never been claimed. \
         CPU s: this process only (a peer's server is a process of its own).",
        baseline.rtt_us_p50, baseline.rtt_same_thread_us_p50, baseline.fsync_us_p50
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_no_run_had_shows_as_a_dash_not_a_zero() {
        assert_eq!(Spread::of(&[]).show(0), "—");
        assert_eq!(Spread::of(&[338.0, 470.0]).show(0), "404 (338–470)");
    }
}
