//! The progress bar: one step per measured run, on stderr, so stdout stays a clean report.
//!
//! indicatif hides the bar by itself when stderr is not a terminal (CI, tests, redirects).

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// How often the bar redraws its spinner and elapsed time.
const TICK: Duration = Duration::from_millis(200);

/// A progress bar over the runs of one invocation.
#[derive(Debug, Clone)]
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar of `steps` runs.
    pub fn new(steps: u64) -> Self {
        let bar = ProgressBar::new(steps);
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {wide_msg}",
            )
            .expect("the template is valid"),
        );
        bar.enable_steady_tick(TICK);
        Self { bar }
    }

    /// Announces the run now in progress.
    pub fn start(&self, what: impl Into<String>) {
        self.bar.set_message(what.into());
    }

    /// Counts one run as done.
    pub fn done(&self) {
        self.bar.inc(1);
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
