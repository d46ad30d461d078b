//! A follower: one partition, read from its first record with long polls, applied to the view.
//!
//! A worker runs two — `tasks` and `claims` — each feeding the one [`LiveView`] in log order.
//! Both start at `Earliest`: the verdict is a fold over the whole claims log, and a reader that
//! started later would not know the leases granted before its start.
//!
//! `Follow` sends FETCH v2 long polls, so an idle partition costs one request per
//! `follow_max_wait_ms`. A lost connection is retried (the consumer reopens it; FETCH is safe to
//! repeat — the rule every sample shares, [`crate::support::retry`]) a bounded number of times in
//! a row; anything else — a CRC mismatch, an offset out of range after retention or a broker that
//! lost its tail — stops the follower, and with it the worker: its verdicts would no longer be
//! everyone's.

use std::sync::Arc;
use std::time::Duration;

use booblik_client::Follow;
use tokio::task::JoinHandle;

use super::view::LiveView;
use crate::queue::state::LogName;
use crate::support::retry::{RETRY_BACKOFF_MS, is_transient};

/// Connection failures in a row after which a follower gives up (about 10 s of outage, at
/// [`RETRY_BACKOFF_MS`] between attempts).
pub const MAX_CONSECUTIVE_FOLLOW_FAILURES: u32 = 20;

/// Spawns the follower of `log`; it runs until it fails for good or is aborted.
pub(crate) fn spawn(follow: Follow, log: LogName, view: Arc<LiveView>) -> JoinHandle<()> {
    tokio::spawn(run(follow, log, view))
}

async fn run(mut follow: Follow, log: LogName, view: Arc<LiveView>) {
    let mut failures = 0u32;
    loop {
        match follow.next_batch().await {
            Ok(batch) => {
                failures = 0;
                view.apply(log, &batch.records, batch.next_offset);
                if view.failure().is_some() {
                    return;
                }
            }
            Err(error) if is_transient(&error) && failures < MAX_CONSECUTIVE_FOLLOW_FAILURES => {
                failures += 1;
                tracing::warn!(%log, %error, failures, position = follow.position(), "follower lost its connection; retrying");
                tokio::time::sleep(Duration::from_millis(RETRY_BACKOFF_MS)).await;
            }
            Err(error) => {
                tracing::error!(%log, %error, position = follow.position(), "follower stopped");
                view.fail(format!(
                    "{log} follower at offset {}: {error}",
                    follow.position()
                ));
                return;
            }
        }
    }
}
