//! Latency recording: an HDR histogram of nanoseconds, summarised as percentiles in
//! microseconds.
//!
//! HdrHistogram keeps every value to three significant digits in bounded memory, so a run can
//! record millions of latencies and still report an exact-enough p99.9 and the true maximum.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

/// Significant decimal digits kept by every histogram.
const SIGNIFICANT_DIGITS: u8 = 3;
/// Largest latency recorded as itself (one hour, in ns); anything longer is recorded as this.
const MAX_RECORDED_NS: u64 = 3_600_000_000_000;

/// Percentiles of one distribution, in microseconds (JSON keys `p50`, `p90`, `p99`, `p999`,
/// `max`).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest value recorded.
    pub max: f64,
}

/// A histogram of latencies.
#[derive(Debug, Clone)]
pub struct LatencyRecorder {
    nanos: Histogram<u64>,
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyRecorder {
    /// An empty recorder for latencies from 1 ns to [`MAX_RECORDED_NS`].
    pub fn new() -> Self {
        Self {
            nanos: Histogram::new_with_bounds(1, MAX_RECORDED_NS, SIGNIFICANT_DIGITS)
                .expect("the bounds are valid"),
        }
    }

    /// Records one latency.
    pub fn record(&mut self, latency: Duration) {
        let nanos = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX).max(1);
        self.nanos.saturating_record(nanos);
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.nanos.len()
    }

    /// The latency at `quantile` (0..=1), microseconds.
    pub fn quantile_us(&self, quantile: f64) -> f64 {
        self.nanos.value_at_quantile(quantile) as f64 / 1_000.0
    }

    /// The percentiles (all zero when nothing was recorded).
    pub fn percentiles(&self) -> Percentiles {
        if self.nanos.is_empty() {
            return Percentiles::default();
        }
        Percentiles {
            p50: self.quantile_us(0.5),
            p90: self.quantile_us(0.9),
            p99: self.quantile_us(0.99),
            p999: self.quantile_us(0.999),
            max: self.nanos.max() as f64 / 1_000.0,
        }
    }

    /// The cumulative distribution as `(latency_us, fraction at or below)` points, one per
    /// populated bucket, for plotting.
    pub fn cdf_us(&self) -> Vec<(f64, f64)> {
        let total = self.nanos.len();
        if total == 0 {
            return Vec::new();
        }
        let mut seen = 0u64;
        self.nanos
            .iter_recorded()
            .map(|bucket| {
                seen += bucket.count_at_value();
                (
                    bucket.value_iterated_to() as f64 / 1_000.0,
                    seen as f64 / total as f64,
                )
            })
            .collect()
    }
}
