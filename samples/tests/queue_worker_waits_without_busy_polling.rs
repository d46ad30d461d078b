//! An idle worker waits: its followers long-poll (about one FETCH per follower per
//! `follow_max_wait_ms`) and its loop sleeps until the logs move — yet a new task is picked up
//! as soon as it arrives.

mod queue_worker_support;

use std::time::Duration;

use booblik_samples::queue::worker::{Worker, WorkerConfig, submit_task};
use queue_worker_support::{
    EmbeddedBroker, RunningWorker, WatchingProxy, quick_config, wait_until,
};

const FOLLOW_MAX_WAIT_MS: u64 = 500;
const IDLE_WINDOW: Duration = Duration::from_secs(1);
/// Two followers, each one long poll per 500 ms, plus the ones in flight at either end of the
/// window. A busy-polling worker would send hundreds.
const MAX_IDLE_FETCHES: usize = 8;
/// The loop sleeps until a record arrives or a lease lapses; with neither, it barely wakes.
const MAX_IDLE_WAKEUPS: u64 = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_worker_long_polls_and_sleeps_yet_picks_up_new_work_at_once() {
    let broker = EmbeddedBroker::start().await;
    let proxy = WatchingProxy::start(broker.addr()).await;
    let config = WorkerConfig {
        follow_max_wait_ms: FOLLOW_MAX_WAIT_MS,
        ..quick_config(1_000, 20)
    };
    let worker = Worker::start(proxy.client().await, config).await.unwrap();
    let running = RunningWorker::spawn(worker);
    wait_until("the worker is idle", || async {
        running.worker.stats().idle_waits >= 1
    })
    .await;

    let fetches_before = proxy.seen().fetches.len();
    let wakeups_before = running.worker.stats().idle_waits;
    tokio::time::sleep(IDLE_WINDOW).await;
    let seen = proxy.seen();
    let idle_fetches = seen.fetches.len() - fetches_before;
    let idle_wakeups = running.worker.stats().idle_waits - wakeups_before;

    assert!(
        seen.fetches
            .iter()
            .all(|wait| *wait == Some(FOLLOW_MAX_WAIT_MS as i32)),
        "every FETCH is a long poll of follow_max_wait_ms: {:?}",
        seen.fetches
    );
    assert!(
        (1..=MAX_IDLE_FETCHES).contains(&idle_fetches),
        "{idle_fetches} FETCH requests in {IDLE_WINDOW:?} of idleness"
    );
    assert!(
        idle_wakeups <= MAX_IDLE_WAKEUPS,
        "the idle loop woke {idle_wakeups} times in {IDLE_WINDOW:?}"
    );

    let submitter = broker.client().await;
    submit_task(&submitter, "tasks", b"wake up".to_vec())
        .await
        .unwrap();
    wait_until("the new task is completed", || async {
        running.worker.stats().completed == 1
    })
    .await;
    running.stop().await;
}
