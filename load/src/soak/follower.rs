//! A soak follower: follows one partition from offset 0 with `follow()`, restarting itself
//! every few seconds, and checks that its reads are continuous.
//!
//! A follower keeps its position the way an application with a checkpoint does. It restarts (a
//! new consumer, a new connection) at random moments and resumes either **at its saved
//! position** — the next record read must be exactly that offset: no gap, no duplicate — or,
//! with some probability, **at an older checkpoint**, as an application that crashed between
//! handling records and saving their position would. The records read again then are counted as
//! re-reads, and the ledger checks they are the same records as the first time.
//!
//! Within one continuous read (one consumer), every batch must start at the offset the previous
//! one ended and hold consecutive offsets. Losing the connection (the broker restarts) is a
//! restart at the saved position, not a violation; a CRC or protocol error is a violation.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use booblik_client::{Client, ClientError, ConsumerConfig, StartPosition};
use rand::Rng;
use tokio::sync::watch;
use tokio::time::Instant;

use super::ledger::Ledger;

/// Checkpoints remembered for resuming behind.
const CHECKPOINT_HISTORY: usize = 16;
/// Pause after a connection failure before trying again.
const RETRY_PAUSE: Duration = Duration::from_millis(50);
/// Consecutive failures to start a consumer before the follower gives up.
const MAX_START_FAILURES: u32 = 600;

/// How one follower behaves.
#[derive(Debug, Clone)]
pub struct FollowerPlan {
    /// Name in violations.
    pub name: String,
    /// Partition followed.
    pub partition: i32,
    /// Shortest life of one consumer.
    pub restart_min_ms: u64,
    /// Longest life of one consumer.
    pub restart_max_ms: u64,
    /// Chance that a restart resumes at an older checkpoint.
    pub behind_probability: f64,
}

/// What a follower did.
#[derive(Debug, Clone, Copy, Default)]
pub struct FollowerTally {
    /// Records read, re-reads included.
    pub records_read: u64,
    /// Records read again after resuming behind.
    pub rereads: u64,
    /// Planned restarts.
    pub restarts: u64,
    /// Planned restarts that resumed behind the saved position.
    pub behind_restarts: u64,
    /// Restarts forced by a lost connection.
    pub error_restarts: u64,
    /// Position when it finished.
    pub final_position: i64,
}

/// Follows until `end` says where the partition ends and it has read that far.
pub async fn run(
    client: Client,
    plan: FollowerPlan,
    ledger: Arc<Ledger>,
    mut end: watch::Receiver<Option<i64>>,
) -> anyhow::Result<FollowerTally> {
    let mut tally = FollowerTally::default();
    let mut position = 0i64;
    let mut highest_read = 0i64;
    let mut checkpoints: VecDeque<i64> = VecDeque::with_capacity(CHECKPOINT_HISTORY);
    let mut start_failures = 0u32;
    let finished = |position: i64, end: &watch::Receiver<Option<i64>>| {
        end.borrow().is_some_and(|end| position >= end)
    };
    while !finished(position, &end) {
        let consumer = match client
            .consumer(
                super::TOPIC,
                plan.partition,
                StartPosition::At(position),
                ConsumerConfig::default(),
            )
            .await
        {
            Ok(consumer) => consumer,
            Err(error) if is_transient(&error) => {
                start_failures += 1;
                anyhow::ensure!(
                    start_failures < MAX_START_FAILURES,
                    "{}: cannot start a consumer: {error}",
                    plan.name
                );
                tokio::time::sleep(RETRY_PAUSE).await;
                continue;
            }
            Err(error) => return Err(error.into()),
        };
        start_failures = 0;
        let life_ms = rand::rng().random_range(plan.restart_min_ms..=plan.restart_max_ms);
        let restart_at = Instant::now() + Duration::from_millis(life_ms);
        let mut follow = consumer.follow();
        let mut expected = position;
        let planned = loop {
            tokio::select! {
                batch = follow.next_batch() => match batch {
                    Ok(batch) => {
                        for (i, record) in batch.records.iter().enumerate() {
                            if record.offset != expected + i as i64 {
                                ledger.violation(format!(
                                    "{}: expected offset {} in a continuous read, got {}",
                                    plan.name, expected + i as i64, record.offset
                                ));
                            }
                            if record.offset < highest_read {
                                tally.rereads += 1;
                            }
                            ledger.read(plan.partition, record.offset, &record.payload);
                        }
                        tally.records_read += batch.records.len() as u64;
                        expected = batch.next_offset;
                        highest_read = highest_read.max(expected);
                        if checkpoints.len() == CHECKPOINT_HISTORY {
                            checkpoints.pop_front();
                        }
                        checkpoints.push_back(expected);
                        if finished(expected, &end) {
                            break true;
                        }
                    }
                    Err(error) => {
                        if !is_transient(&error) {
                            ledger.violation(format!("{}: {error}", plan.name));
                        }
                        tally.error_restarts += 1;
                        tokio::time::sleep(RETRY_PAUSE).await;
                        break false;
                    }
                },
                () = tokio::time::sleep_until(restart_at) => break true,
                changed = end.changed() => {
                    changed?;
                    if finished(expected, &end) {
                        break true;
                    }
                }
            }
        };
        position = expected;
        if planned && !finished(position, &end) {
            tally.restarts += 1;
            let go_behind = rand::rng().random_bool(plan.behind_probability);
            if go_behind && let Some(&older) = checkpoints.front() {
                tally.behind_restarts += 1;
                position = older;
            }
        }
    }
    tally.final_position = position;
    Ok(tally)
}

/// Failures a restarting broker causes; anything else is a violation.
pub fn is_transient(error: &ClientError) -> bool {
    matches!(
        error,
        ClientError::Connect { .. }
            | ClientError::ConnectTimeout { .. }
            | ClientError::ConnectionClosed { .. }
            | ClientError::Timeout { .. }
    )
}
