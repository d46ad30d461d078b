//! Logging for the sample binaries: `tracing` to **stderr**, so that a sample whose result goes to
//! stdout (the replay consumer's JSON summary, the demo's table) keeps stdout clean.
//!
//! The filter comes from `RUST_LOG` (e.g. `RUST_LOG=debug`, `RUST_LOG=booblik_client=trace`), and is
//! `info` when unset.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber with `info` as the default filter. Call once, first thing in
/// `main`.
pub fn init() {
    init_with_default("info");
}

/// Installs the global subscriber; `default_filter` applies when `RUST_LOG` is unset.
pub fn init_with_default(default_filter: &str) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only for people: `docker logs` and tests read plain text.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}
