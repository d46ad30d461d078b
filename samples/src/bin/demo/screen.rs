//! Presentation: the live table and each part's one-line status.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use booblik_samples::events::follow::FollowState;
use booblik_samples::events::projection::ProjectionState;
use booblik_samples::events::projection::http::stats_json;
use booblik_samples::queue::worker::{Freeze, Worker};

/// Redraws the table in place on a terminal; appends it otherwise (logs, tests).
pub struct Screen {
    pub redraw: bool,
    lines_drawn: usize,
}

impl Screen {
    pub fn new(redraw: bool) -> Self {
        Self {
            redraw,
            lines_drawn: 0,
        }
    }

    pub fn draw(&mut self, elapsed: Duration, lines: &[String]) {
        let mut out = std::io::stdout().lock();
        if self.redraw && self.lines_drawn > 0 {
            // Cursor up over the previous table, then clear to the end of the screen.
            let _ = write!(out, "\x1b[{}A\x1b[J", self.lines_drawn);
        }
        let _ = writeln!(out, "[{:>4}s]", elapsed.as_secs());
        for line in lines {
            let _ = writeln!(out, "  {line}");
        }
        if !self.redraw {
            let _ = writeln!(out);
        }
        let _ = out.flush();
        self.lines_drawn = lines.len() + 1;
    }
}

/// A worker's line: counters, what it holds, and whether its thread is frozen right now.
pub fn worker_status(worker: &Worker, freeze: Option<&Freeze>, name: &str) -> String {
    let s = worker.stats();
    let holding = worker.current_task().map_or_else(
        || "idle".to_owned(),
        |(task, token)| format!("holding {} (token {token})", &task.to_string()[..8]),
    );
    let frozen = freeze
        .filter(|f| f.is_blocking() && f.frozen().is_some_and(|frozen| frozen.who == name))
        .map_or(String::new(), |f| {
            format!(
                "  FROZEN: its thread is blocked for {} ms",
                f.duration().as_millis()
            )
        });
    format!(
        "claims {:<5} won {:<5} lost races {:<4} completed {:<5} {holding}{frozen}",
        s.claims, s.wins, s.lost_races, s.completed
    )
}

pub fn follow_status(state: &FollowState, partition: i32) -> String {
    let partitions = state.partitions();
    let Some(p) = partitions.get(&partition) else {
        return "starting".to_owned();
    };
    let start = p.resumed_from.map_or_else(
        || "earliest (nothing saved)".to_owned(),
        |offset| format!("saved position {offset}"),
    );
    let mut line = format!(
        "at {:<7} lag {:<5} records {:<7} started from {start}",
        p.next_offset,
        (p.high_watermark - p.next_offset).max(0),
        p.tally.records,
    );
    if p.tally.duplicates > 0 {
        let _ = write!(line, ", {} duplicates", p.tally.duplicates);
    }
    if p.tally.violations() > 0 {
        let _ = write!(line, ", {} VIOLATIONS", p.tally.violations());
    }
    line
}

pub fn projection_status(state: &ProjectionState, top: usize) -> String {
    let stats = stats_json(state, top);
    let top_users: Vec<String> = stats["top_users"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|u| format!("{} {}", u["user_id"].as_str().unwrap_or("?"), u["events"]))
        .collect();
    let phase = stats["phase"].as_str().unwrap_or("?");
    let mut line = format!(
        "{phase:<11} events {:<7} users {:<4} top: {}",
        stats["events"],
        stats["users"],
        top_users.join(", ")
    );
    if stats["violations"].as_u64().unwrap_or(0) > 0 {
        let _ = write!(line, ", {} VIOLATIONS", stats["violations"]);
    }
    line
}

/// The path as given, and absolute when that differs.
pub fn shown(path: &Path) -> String {
    match std::fs::canonicalize(path) {
        Ok(absolute) if absolute != path => format!("{} ({})", path.display(), absolute.display()),
        _ => path.display().to_string(),
    }
}
