//! A soak replayer: the "fetch" part of the mix. Again and again, it picks a partition and a
//! start offset at random, reads with `replay()` (plain FETCH v1) up to the high watermark seen
//! at its start, and checks that the read is continuous and that every record is the one the
//! ledger knows at that offset.

use std::sync::Arc;
use std::time::Duration;

use booblik_client::{Client, ConsumerConfig, StartPosition};
use rand::Rng;
use tokio::sync::watch;

use super::follower::is_transient;
use super::ledger::Ledger;

/// A replay reads at most this many records back from the high watermark.
const MAX_REPLAY_RECORDS: i64 = 20_000;
/// Pause between two replays.
const PAUSE: Duration = Duration::from_millis(100);

/// What a replayer did.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplayerTally {
    /// Replays completed.
    pub replays: u64,
    /// Records read.
    pub records_read: u64,
    /// Replays cut short by a lost connection.
    pub interrupted: u64,
}

/// Replays until `stop` turns true.
pub async fn run(
    client: Client,
    name: String,
    partitions: i32,
    ledger: Arc<Ledger>,
    stop: watch::Receiver<bool>,
) -> anyhow::Result<ReplayerTally> {
    let mut tally = ReplayerTally::default();
    while !*stop.borrow() {
        tokio::time::sleep(PAUSE).await;
        let partition = rand::rng().random_range(0..partitions);
        match replay_once(&client, &name, partition, &ledger).await {
            Ok(read) => {
                tally.replays += 1;
                tally.records_read += read;
            }
            Err(error) if is_transient(&error) => tally.interrupted += 1,
            Err(error) => ledger.violation(format!("{name}: {error}")),
        }
    }
    Ok(tally)
}

async fn replay_once(
    client: &Client,
    name: &str,
    partition: i32,
    ledger: &Ledger,
) -> Result<u64, booblik_client::ClientError> {
    let topic = client.topic(super::TOPIC).await?;
    let end = topic.high_watermark(partition).unwrap_or(0);
    let back = rand::rng().random_range(0..=MAX_REPLAY_RECORDS);
    let start = (end - back).max(0);
    let consumer = client
        .consumer(
            super::TOPIC,
            partition,
            StartPosition::At(start),
            ConsumerConfig::default(),
        )
        .await?;
    let mut replay = consumer.replay().await?;
    let mut expected = start;
    let mut read = 0u64;
    while let Some(batch) = replay.next_batch().await? {
        for (i, record) in batch.records.iter().enumerate() {
            if record.offset != expected + i as i64 {
                ledger.violation(format!(
                    "{name}: expected offset {} in a replay, got {}",
                    expected + i as i64,
                    record.offset
                ));
            }
            ledger.read(partition, record.offset, &record.payload);
        }
        read += batch.records.len() as u64;
        expected = batch.next_offset;
    }
    Ok(read)
}
