//! What the numbers were measured on: cores, CPU model, and how busy the machine was.
//!
//! The load average is recorded at the start and the end of a report because the machine may be
//! shared: a figure measured while others were compiling is not the same figure, and the report
//! must say so rather than hide it.

use serde::Serialize;

/// The machine a report was measured on.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// Logical CPUs available to this process.
    pub cores: usize,
    /// `model name` from `/proc/cpuinfo`.
    pub cpu_model: String,
    /// 1-minute load average when the report started.
    pub load_average_1m_start: f64,
    /// 1-minute load average when the report ended.
    pub load_average_1m_end: f64,
}

impl Machine {
    /// Describes this machine now.
    pub fn probe() -> Self {
        let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split(':').nth(1))
                    .map(|m| m.trim().to_string())
            })
            .unwrap_or_else(|| "unknown CPU".into());
        let load = load_average_1m();
        Self {
            cores,
            cpu_model,
            load_average_1m_start: load,
            load_average_1m_end: load,
        }
    }

    /// Records the load average at the end of the report.
    pub fn finish(&mut self) {
        self.load_average_1m_end = load_average_1m();
    }

    /// One line for humans.
    pub fn describe(&self) -> String {
        format!(
            "{} cores, {}; load average (1 min) {:.2} at start, {:.2} at end",
            self.cores, self.cpu_model, self.load_average_1m_start, self.load_average_1m_end
        )
    }
}

/// The first field of `/proc/loadavg`, or `NaN` where there is none.
pub fn load_average_1m() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(f64::NAN)
}
