//! The booblik engine keeps the partition-log contract (`engine_support::check_contract`).

mod engine_support;

use booblik_client::{Client, ConnectionConfig};
use booblik_samples::engine::BooblikEngine;
use booblik_samples::support::embedded_broker;

#[tokio::test]
async fn the_booblik_engine_keeps_the_partition_log_contract() {
    let dir = tempfile::tempdir().unwrap();
    let broker = embedded_broker::start(dir.path(), "127.0.0.1:0".parse().unwrap(), "contract:1")
        .await
        .unwrap();
    let client = Client::connect(broker.local_addr().to_string(), ConnectionConfig::default())
        .await
        .unwrap();
    engine_support::check_contract(&BooblikEngine::new(client), "contract").await;
}
