//! SVG plots of the queue runs (plotters, SVG backend):
//!
//! * `claim-latency-<workers>w-<arrival>[-<chaos>]-<work>ms.svg` — one plot per scenario: the
//!   cumulative distribution of claim latency of booblik and of every peer in that scenario,
//!   latency on a log axis so the median and the tail both show. With repetitions, each system's
//!   curve is its repetition with the median claim p50;
//! * `attempts-per-task.svg` — for booblik's backlog runs without chaos (first repetition, each
//!   pick and ack), the share of tasks that needed 1, 2, 3, … claims.

use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};
use plotters::prelude::*;

use super::report::{Scenario, median, variant};
use super::run::QueueOutcome;
use super::{Arrival, QueueRun};

/// Pixels of every plot.
const SIZE: (u32, u32) = (960, 600);
/// Series colours, in run order.
const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

fn series_name(run: &QueueRun) -> String {
    match run.pick {
        Some(pick) => format!("{} workers, pick {}", run.workers, pick.name()),
        None => run.system.to_owned(),
    }
}

fn file_name(scenario: &Scenario) -> String {
    format!(
        "claim-latency-{}w-{}{}-{}ms.svg",
        scenario.workers,
        scenario.arrival.name(),
        scenario
            .chaos
            .map_or(String::new(), |c| format!("-{}", c.name())),
        scenario.work_ms
    )
}

/// Per variant of `scenario`, the repetition with the median claim p50.
fn representatives(outcomes: &[QueueOutcome], scenario: Scenario) -> Vec<(String, &QueueOutcome)> {
    let mut variants: Vec<String> = Vec::new();
    for o in outcomes.iter().filter(|o| Scenario::of(&o.run) == scenario) {
        let v = variant(&o.run);
        if !variants.contains(&v) {
            variants.push(v);
        }
    }
    variants
        .into_iter()
        .filter_map(|v| {
            let runs: Vec<&QueueOutcome> = outcomes
                .iter()
                .filter(|o| Scenario::of(&o.run) == scenario && variant(&o.run) == v)
                .collect();
            let p50s: Vec<f64> = runs.iter().map(|o| o.run.claim_latency_us.p50).collect();
            let mid = median(&p50s);
            let closest = runs.into_iter().min_by(|a, b| {
                (a.run.claim_latency_us.p50 - mid)
                    .abs()
                    .total_cmp(&(b.run.claim_latency_us.p50 - mid).abs())
            })?;
            Some((v, closest))
        })
        .collect()
}

/// Writes every plot into `dir`; returns the files written.
pub fn write_all(outcomes: &[QueueOutcome], dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut written = Vec::new();
    let mut scenarios: Vec<Scenario> = Vec::new();
    for o in outcomes {
        let scenario = Scenario::of(&o.run);
        if !scenarios.contains(&scenario) {
            scenarios.push(scenario);
        }
    }
    for scenario in scenarios {
        let series = representatives(outcomes, scenario);
        if series.is_empty() {
            continue;
        }
        let path = dir.join(file_name(&scenario));
        claim_latency_cdf(&series, &scenario, &path)?;
        written.push(path);
    }
    let backlog: Vec<&QueueOutcome> = outcomes
        .iter()
        .filter(|o| {
            o.run.system == "booblik"
                && o.run.chaos.is_none()
                && o.run.arrival == Arrival::Backlog
                && o.run.repetition == 0
        })
        .collect();
    if !backlog.is_empty() {
        let path = dir.join("attempts-per-task.svg");
        attempts_per_task(&backlog, &path)?;
        written.push(path);
    }
    Ok(written)
}

fn claim_latency_cdf(
    series: &[(String, &QueueOutcome)],
    scenario: &Scenario,
    path: &Path,
) -> anyhow::Result<()> {
    let curves: Vec<(String, Vec<(f64, f64)>)> = series
        .iter()
        .map(|(name, o)| (name.clone(), o.claim_latency.cdf_us()))
        .filter(|(_, points)| !points.is_empty())
        .collect();
    let min_us = curves
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(x, _)| *x))
        .fold(f64::INFINITY, f64::min)
        .max(1.0);
    let max_us = curves
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(x, _)| *x))
        .fold(0.0, f64::max)
        .max(min_us * 10.0);
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Claim latency, {} (claim issued → won)", scenario.title()),
            ("sans-serif", 22),
        )
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d((min_us * 0.8..max_us * 1.2).log_scale(), 0f64..1f64)
        .map_err(|e| anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .x_desc("claim latency, µs (log scale)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_desc("fraction of claims at or below")
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    for (index, (name, points)) in curves.into_iter().enumerate() {
        let colour = COLOURS[index % COLOURS.len()];
        chart
            .draw_series(LineSeries::new(points, colour.stroke_width(2)))
            .map_err(|e| anyhow!("{e}"))?
            .label(name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 24, y)], colour.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow!("{e}"))?;
    Ok(())
}

fn attempts_per_task(runs: &[&QueueOutcome], path: &Path) -> anyhow::Result<()> {
    let max_attempts = runs
        .iter()
        .flat_map(|o| o.run.attempts_histogram.iter().map(|(a, _)| *a))
        .max()
        .unwrap_or(1)
        .max(1);
    let series = runs.len() as f64;
    let bar_width = 0.8 / series;
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    let mut chart = ChartBuilder::on(&root)
        .caption("Claims needed per task (backlog)", ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d(-0.5f64..max_attempts as f64 + 0.5, 0f64..1f64)
        .map_err(|e| anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .x_desc("claims appended for the task")
        .y_desc("fraction of tasks")
        .x_labels((max_attempts + 2) as usize)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    for (index, outcome) in runs.iter().enumerate() {
        let colour = COLOURS[index % COLOURS.len()];
        let total = outcome.run.tasks_total.max(1) as f64;
        let left_of = |attempts: u64| attempts as f64 - 0.4 + index as f64 * bar_width;
        chart
            .draw_series(
                outcome
                    .run
                    .attempts_histogram
                    .iter()
                    .map(|&(attempts, tasks)| {
                        Rectangle::new(
                            [
                                (left_of(attempts), 0.0),
                                (left_of(attempts) + bar_width, tasks as f64 / total),
                            ],
                            colour.filled(),
                        )
                    }),
            )
            .map_err(|e| anyhow!("{e}"))?
            .label(format!(
                "{} ({})",
                series_name(&outcome.run),
                variant(&outcome.run)
            ))
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], colour.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow!("{e}"))?;
    Ok(())
}
