//! `relay --bench-records N` produces N records per partition into the source, relays them, then
//! produces N into the target, and prints the three rates in one summary. The figures are not
//! judged here (timing belongs to measurements, `docs/relay.md`); that the three are reported,
//! and that the relay moved exactly what was produced, is.

mod relay_support;

use relay_support::{PARTITIONS, booblik, read_all, relay_args, spawn_relay, start_broker};

use booblik_samples::engine::LogEngine;

const RECORDS: u64 = 2_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bench_reports_three_rates_and_relays_what_it_produced() {
    let dir = tempfile::tempdir().unwrap();
    let source = start_broker(&dir.path().join("a"), "scratch:2").await;
    let target = start_broker(&dir.path().join("b"), "scratch:2").await;
    let args = relay_args(
        dir.path(),
        &format!("booblik://{}/scratch", source.local_addr()),
        &format!("booblik://{}/scratch", target.local_addr()),
        &["--bench-records", &RECORDS.to_string()],
    );
    let mut child = spawn_relay(dir.path(), 0, &args);
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .unwrap();
    let out = std::fs::read_to_string(dir.path().join("relay-0.out")).unwrap();
    let err = std::fs::read_to_string(dir.path().join("relay-0.err")).unwrap();
    assert!(status.success(), "{err}");
    let summary: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(summary["relayed"], RECORDS * PARTITIONS as u64, "{summary}");
    let bench = &summary["bench"];
    for rate in [
        "source_produce_records_per_s",
        "relay_records_per_s",
        "target_produce_records_per_s",
    ] {
        assert!(bench[rate].as_f64().unwrap() > 0.0, "{rate}: {bench}");
    }
    // The target got the relayed records and then the bench's own: twice N per partition.
    let engine = booblik(&target).await;
    for p in 0..PARTITIONS {
        let log = engine.open("scratch", p).await.unwrap();
        assert_eq!(read_all(log.as_ref()).await.len() as u64, 2 * RECORDS);
    }
}
