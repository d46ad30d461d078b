//! What every workload of one invocation shares: the baseline measured at its start, where
//! scratch data goes, and whether to use an external broker instead of starting one.

use std::path::PathBuf;

use crate::baseline::Baseline;

/// Shared state of one invocation.
#[derive(Debug, Clone)]
pub struct Harness {
    /// The machine's floor, measured in this invocation.
    pub baseline: Baseline,
    /// Directory under which fresh brokers get their temporary data directories.
    pub data_parent: PathBuf,
    /// `host:port` of a broker to use instead of starting one (`--broker`).
    pub external_broker: Option<String>,
}
