//! The three queue commands work together against a broker: `queue-submit` enqueues,
//! `queue-worker` completes the tasks (its `GET /stats` shows the documented fields) and stops on
//! SIGTERM, and `queue-verify` passes a clean run and fails — exit status 1 — once an invariant
//! is broken.

mod queue_worker_support;

use std::process::Stdio;
use std::time::Duration;

use booblik_samples::queue::record::{Claim, ClaimsRecord};
use booblik_samples::queue::worker::wall_clock_ms;
use queue_worker_support::{EmbeddedBroker, TEST_DEADLINE, append_claims_record, wait_until};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use uuid::Uuid;

const TASKS: u64 = 3;

fn command(binary: &str, broker: &str) -> Command {
    let mut command = Command::new(binary);
    command
        .arg("--broker")
        .arg(broker)
        .env("RUST_LOG", "warn")
        .env_remove("BOOBLIK_STATS_BIND")
        .kill_on_drop(true);
    command
}

/// Runs `queue-verify` and returns its exit status and JSON report.
async fn queue_verify(broker: &str) -> (Option<i32>, Value) {
    let output = command(env!("CARGO_BIN_EXE_queue-verify"), broker)
        .args(["--lost-after-ms", "0"])
        .output()
        .await
        .unwrap();
    let report = serde_json::from_slice(&output.stdout).expect("queue-verify prints JSON");
    (output.status.code(), report)
}

/// `GET /stats` over a plain HTTP/1.1 connection.
async fn get_stats(addr: &str) -> Option<Value> {
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    stream
        .write_all(b"GET /stats HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
        .await
        .ok()?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.ok()?;
    let text = String::from_utf8(response).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200")
        .then(|| serde_json::from_str(body).ok())?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_then_work_then_verify_and_a_broken_invariant_fails_verification() {
    let broker = EmbeddedBroker::start().await;
    let addr = broker.addr();

    let submitted = command(env!("CARGO_BIN_EXE_queue-submit"), &addr)
        .args(["--count", &TASKS.to_string(), "--print-ids"])
        .output()
        .await
        .unwrap();
    assert!(submitted.status.success(), "{submitted:?}");
    let stdout = String::from_utf8(submitted.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len() as u64, TASKS + 1, "{stdout}");
    for line in &lines[..TASKS as usize] {
        let (id, offset) = line.split_once(' ').expect("`task_id offset`");
        id.parse::<Uuid>().unwrap();
        offset.parse::<i64>().unwrap();
    }
    let summary: Value = serde_json::from_str(lines[TASKS as usize]).unwrap();
    assert_eq!(summary["submitted"], TASKS);

    let stats_addr = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().to_string()
    };
    let worker_id = Uuid::new_v4();
    let mut worker = command(env!("CARGO_BIN_EXE_queue-worker"), &addr)
        .args(["--lease-ms", "1000", "--work-ms", "20", "--pick", "first"])
        .args(["--worker-id", &worker_id.to_string()])
        .args(["--stats-bind", &stats_addr])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the worker reports every task completed", || async {
        get_stats(&stats_addr)
            .await
            .is_some_and(|stats| stats["completed"] == TASKS)
    })
    .await;
    let stats = get_stats(&stats_addr).await.unwrap();
    assert_eq!(stats["worker_id"], worker_id.to_string());
    assert_eq!(stats["current_task"], Value::Null);
    assert_eq!(stats["claims"], TASKS);
    assert_eq!(stats["wins"], TASKS);
    for field in ["lost_races", "leases_lost", "extends"] {
        assert!(stats[field].is_u64(), "{field} in {stats}");
    }

    let pid = worker.id().expect("the worker runs").to_string();
    let kill = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .unwrap();
    assert!(kill.success());
    let status = tokio::time::timeout(TEST_DEADLINE, worker.wait())
        .await
        .expect("the worker stops on SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");

    let (code, report) = queue_verify(&addr).await;
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["clean"], true);
    assert_eq!(report["summary"]["completed"], TASKS);

    // A claim for a task nobody submitted breaks "every claimed task exists".
    let client = broker.client().await;
    let forged = ClaimsRecord::Claim(Claim {
        task_id: Uuid::new_v4(),
        worker_id,
        claimed_at_ms: wall_clock_ms(),
        lease_ms: 1_000,
    });
    append_claims_record(&client, &forged).await;
    tokio::time::sleep(Duration::from_millis(10)).await;
    let (code, report) = queue_verify(&addr).await;
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(report["clean"], false);
    assert!(
        report["violations"]
            .to_string()
            .contains("ClaimForUnknownTask"),
        "{report:#}"
    );
}
