//! On booblik (an embedded broker): the body the JetStream leader-kill test runs too
//! (`engine_samples_support::queue::queue_completes_every_task_through`), with no fault: every
//! task submitted with `queue-submit` is completed once by three workers, `queue-verify` finds
//! every invariant holding, the fencing sink holds one effect per task, and every effect came
//! under a lease the claims log granted.

mod engine_samples_support;

use booblik_client::{Client, ConnectionConfig};
use engine_samples_support::queue::{connect_with, queue_completes_every_task_through};
use engine_samples_support::start_booblik;

/// Lease of every claim: the default.
const LEASE_MS: u64 = 5_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_complete_every_task_once_through_the_fencing_sink_on_booblik() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, flags) = start_booblik(dir.path()).await;
    let addr = broker.local_addr().to_string();
    let connect = connect_with(move || {
        let addr = addr.clone();
        async move {
            Client::connect(addr, ConnectionConfig::default())
                .await
                .expect("a worker's client connects")
        }
    });
    queue_completes_every_task_through(&flags, connect, LEASE_MS, || async {}).await;
}
