//! What every workload of one invocation shares: the baseline measured at its start, where
//! scratch data goes, and whether to use an external broker instead of starting one.

use std::path::PathBuf;

use crate::baseline::Baseline;
use booblik_broker::storage::WriteMode;

use crate::broker_host::{BrokerHost, BrokerProcess, BrokerSpec};

/// Shared state of one invocation.
#[derive(Debug, Clone)]
pub struct Harness {
    /// The machine's floor, measured in this invocation.
    pub baseline: Baseline,
    /// Directory under which fresh brokers get their temporary data directories.
    pub data_parent: PathBuf,
    /// `host:port` of a broker to use instead of starting one (`--broker`).
    pub external_broker: Option<String>,
    /// Where fresh brokers run (`--broker-process`); each workload's own default otherwise.
    pub broker_process: Option<BrokerProcess>,
    /// How fresh brokers write their segments (`--write-mode`).
    pub write_mode: WriteMode,
}

impl Harness {
    /// Runs `workload` against a fresh broker serving `spec` (or `--broker`), then stops the
    /// broker — also when the workload failed, so a failed run leaves no broker behind.
    pub async fn with_broker<T>(
        &self,
        spec: &BrokerSpec,
        workload: impl AsyncFnOnce(&BrokerHost) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let process = self.broker_process.unwrap_or(spec.process);
        let spec = BrokerSpec {
            write_mode: self.write_mode,
            ..spec.clone()
        };
        let host = BrokerHost::fresh_or_external(
            self.external_broker.as_deref(),
            &spec,
            process,
            &self.data_parent,
        )
        .await?;
        let result = workload(&host).await;
        host.stop().await?;
        result
    }
}
