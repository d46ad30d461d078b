//! A worker whose broker comes back with a different claims log under its followers' position —
//! what a broker machine crash that lost unsynced records looks like once new records took their
//! offsets — stops with a queue error naming the rewritten log, instead of folding someone
//! else's records into its verdicts.
//!
//! The crash is played by two brokers on one address: the first holds the records the worker
//! read; the second, started over a fresh data directory after the first stops, holds the same
//! task record (byte for byte, so the tasks follower's check passes) and other claims records
//! at the claims follower's offsets and beyond.

mod queue_worker_support;

use std::net::SocketAddr;

use booblik_client::{AckPolicy, Client, ConnectionConfig, TopicName};
use booblik_protocol::RecordSet;
use booblik_samples::queue::record::{Claim, ClaimsRecord};
use booblik_samples::queue::state::LogName;
use booblik_samples::queue::worker::{ViewError, Worker, read_raw_logs, submit_task};
use booblik_samples::support::embedded_broker;
use queue_worker_support::{RunningWorker, TEST_DEADLINE, quick_config, wait_until};
use uuid::Uuid;

fn free_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

async fn connect(addr: SocketAddr) -> Client {
    Client::connect(addr.to_string(), ConnectionConfig::default())
        .await
        .unwrap()
}

async fn produce(client: &Client, topic: &str, payloads: Vec<Vec<u8>>) {
    let topic = TopicName::new(topic).unwrap();
    client
        .open_connection()
        .await
        .unwrap()
        .produce(
            &topic,
            0,
            AckPolicy::Written,
            RecordSet::from_payloads(payloads).unwrap(),
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claims_log_rewritten_under_the_worker_stops_it_with_an_error_naming_the_log() {
    let addr = free_addr();
    let dir = tempfile::tempdir().unwrap();
    let first = embedded_broker::start(&dir.path().join("before"), addr, "tasks:1,claims:1")
        .await
        .unwrap();
    submit_task(&connect(addr).await, "tasks", b"job".to_vec())
        .await
        .unwrap();
    let worker = Worker::start(connect(addr).await, quick_config(1_000, 10))
        .await
        .unwrap();
    let running = RunningWorker::spawn(worker);
    wait_until("the worker completes the task", || async {
        running.worker.stats().completed == 1
    })
    .await;
    let (tasks, claims) = read_raw_logs(&connect(addr).await, "tasks", "claims")
        .await
        .unwrap();
    assert!(!claims.is_empty());

    // The "crash": the second broker has the same task record, but other claims records at the
    // worker's claims offsets and beyond. It is filled on a port of its own first, so that the
    // worker's followers, reconnecting, find the whole of the new log at once.
    first.shutdown().await.unwrap();
    let after = dir.path().join("after");
    let filling = embedded_broker::start(&after, free_addr(), "tasks:1,claims:1")
        .await
        .unwrap();
    let client = connect(filling.local_addr()).await;
    produce(
        &client,
        "tasks",
        tasks.iter().map(|(_, bytes)| bytes.to_vec()).collect(),
    )
    .await;
    let foreign_claims = (0..claims.len() + 3)
        .map(|n| {
            ClaimsRecord::Claim(Claim {
                task_id: Uuid::from_u128(n as u128),
                worker_id: Uuid::from_u128(0xF0E1),
                claimed_at_ms: 1,
                lease_ms: 1_000,
            })
            .encode()
        })
        .collect();
    produce(&client, "claims", foreign_claims).await;
    filling.shutdown().await.unwrap();
    let second = embedded_broker::start(&after, addr, "tasks:1,claims:1")
        .await
        .unwrap();

    let outcome = tokio::time::timeout(TEST_DEADLINE, running.handle)
        .await
        .expect("the worker stops by itself")
        .expect("the worker task did not panic");
    let error = outcome.expect_err("the worker stops with an error");
    match error.downcast_ref::<ViewError>() {
        Some(ViewError::LogRewritten {
            log: LogName::Claims,
            offset,
            ..
        }) => assert_eq!(*offset, claims.last().unwrap().0),
        _ => panic!("expected LogRewritten on the claims log, got {error:#}"),
    }
    assert!(format!("{error:#}").contains("claims"), "{error:#}");
    second.shutdown().await.unwrap();
}
