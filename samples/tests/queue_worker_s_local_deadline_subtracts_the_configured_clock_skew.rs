//! A worker's local lease deadline is `issued_at + lease_ms − max_clock_skew_ms`: it stops
//! working before the earliest moment another worker's claim can win, as long as no writer's
//! clock is off by more than the configured skew (a claimer whose clock runs ahead by ε may take
//! over ε early). Unset, the skew is a tenth of the lease, the margin the worker always kept.
//! A running worker whose extends stall keeps that deadline: it gives the lease up at
//! lease − skew, not at the lease.

mod queue_worker_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use booblik_samples::queue::worker::{
    DEFAULT_CLOCK_SKEW_PERCENT, WorkerConfig, WorkerConfigError, local_lease_deadline, read_logs,
};
use queue_worker_support::{
    EmbeddedBroker, WatchingProxy, assert_lease_lost_without_done, assert_no_done_by,
    start_working_on_one_task, wait_until,
};

const LEASE_MS: u64 = 1_000;

#[test]
fn the_local_deadline_is_the_lease_less_the_configured_skew() {
    let issued_at = Instant::now();
    let config = WorkerConfig {
        lease_ms: LEASE_MS,
        max_clock_skew_ms: Some(300),
        ..WorkerConfig::default()
    };
    assert_eq!(config.validate(), Ok(()));
    assert_eq!(config.clock_skew_ms(), 300);
    assert_eq!(
        config.local_lease_deadline(issued_at),
        issued_at + Duration::from_millis(700)
    );
    assert_eq!(
        local_lease_deadline(issued_at, LEASE_MS, 300),
        issued_at + Duration::from_millis(700)
    );

    let unset = WorkerConfig {
        max_clock_skew_ms: None,
        ..config
    };
    assert_eq!(
        unset.clock_skew_ms(),
        LEASE_MS * DEFAULT_CLOCK_SKEW_PERCENT / 100
    );
    assert_eq!(
        unset.local_lease_deadline(issued_at),
        issued_at + Duration::from_millis(900)
    );
}

#[test]
fn a_skew_that_leaves_no_lease_to_work_in_is_refused() {
    let base = WorkerConfig {
        lease_ms: LEASE_MS,
        ..WorkerConfig::default()
    };
    let whole_lease = WorkerConfig {
        max_clock_skew_ms: Some(LEASE_MS),
        ..base.clone()
    };
    assert_eq!(
        whole_lease.validate(),
        Err(WorkerConfigError::ClockSkewNotBelowLease {
            max_clock_skew_ms: LEASE_MS,
            lease_ms: LEASE_MS,
        })
    );
    // The first extend (at lease / 3) would be due after the local deadline (lease − 800).
    let no_time_to_extend = WorkerConfig {
        max_clock_skew_ms: Some(800),
        ..base
    };
    assert_eq!(
        no_time_to_extend.validate(),
        Err(WorkerConfigError::ExtendAfterLocalDeadline {
            extend_every_ms: LEASE_MS / 3,
            local_deadline_ms: LEASE_MS - 800,
        })
    );
}

/// A lease long enough that giving it up at `lease_ms` instead of `lease_ms − skew` is seconds
/// late, with a skew that brings the local deadline down to a third of it.
const RUNNING_LEASE_MS: u64 = 6_000;
const RUNNING_SKEW_MS: u64 = 4_000;
/// The local deadline, 2 s after the lease was issued; the first extend is due at 1 s.
const RUNNING_LOCAL_DEADLINE_MS: u64 = RUNNING_LEASE_MS - RUNNING_SKEW_MS;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_whose_extends_stall_gives_the_lease_up_at_the_lease_less_the_skew() {
    let broker = EmbeddedBroker::start().await;
    let proxy = WatchingProxy::start(broker.addr()).await;
    let submitter = broker.client().await;
    let config = WorkerConfig {
        lease_ms: RUNNING_LEASE_MS,
        max_clock_skew_ms: Some(RUNNING_SKEW_MS),
        extend_every_ms: 1_000,
        // Far longer than the test: the worker can only stop working by giving the lease up.
        work_ms: 60_000,
        ..WorkerConfig::default()
    };
    assert_eq!(config.validate(), Ok(()));
    let mut working =
        start_working_on_one_task(&submitter, proxy.client().await, config, b"skewed").await;
    let worker = Arc::clone(&working.running.worker);

    // From here no extend is confirmed, so the last confirmed issue time is at or before now:
    // the local deadline is at most RUNNING_LOCAL_DEADLINE_MS away, the log's lease about
    // RUNNING_LEASE_MS.
    let stalled_at = Instant::now();
    proxy.stall_produces();
    // Half the local deadline on, the lease is still the worker's (the claim's round trip
    // before `stalled_at` is what is left of the other half).
    tokio::time::sleep(Duration::from_millis(RUNNING_LOCAL_DEADLINE_MS / 2)).await;
    assert_eq!(
        worker.current_task(),
        Some((working.task_id, working.token)),
        "the worker gave the lease up before its local deadline"
    );
    wait_until("the worker has stopped working", || async {
        worker.current_task().is_none()
    })
    .await;
    let stopped_after = stalled_at.elapsed();
    // Midway between the local deadline and the lease: a worker that ignored the skew would
    // still be working here.
    let latest = Duration::from_millis(u64::midpoint(RUNNING_LOCAL_DEADLINE_MS, RUNNING_LEASE_MS));
    assert!(
        stopped_after < latest,
        "the worker stopped {stopped_after:?} after its extends stalled: its local deadline is \
         {RUNNING_LOCAL_DEADLINE_MS} ms after the last confirmed issue, the lease {RUNNING_LEASE_MS} ms"
    );
    assert_eq!(worker.stats().leases_lost, 1);
    assert_lease_lost_without_done(&mut working.events, working.task_id, working.token);
    let (_, claims) = read_logs(&submitter, "tasks", "claims").await.unwrap();
    assert_no_done_by(&claims, working.worker_id);
    // The worker's run is left to end with the test's runtime: its next append would hang too.
    working.running.handle.abort();
}
