//! A soak producer: identified records at a steady rate to one partition, every delivery
//! checked.
//!
//! Deliveries are awaited in order by a collector task: an offset goes into the ledger as
//! acknowledged; an error (expected while the broker restarts) only counts the record as
//! unacknowledged — it may or may not be in the log, and either is legal. The collector also
//! checks per-partition order: one producer's acknowledged offsets rise with its sequence
//! numbers.

use std::sync::Arc;
use std::time::Duration;

use booblik_client::{Client, Delivery, ProducerConfig};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::{mpsc, watch};
use tokio::time::MissedTickBehavior;

use super::ledger::{self, Ledger};

/// Pacing tick.
const TICK: Duration = Duration::from_millis(5);
/// Deliveries waiting for the collector; past this, sending waits.
const DELIVERY_QUEUE_DEPTH: usize = 65_536;

/// What a producer did.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProducerTally {
    /// Records handed to `send`.
    pub sent: u64,
    /// Records whose delivery reported an offset.
    pub acked: u64,
    /// Records whose delivery (or `send`) failed.
    pub failed: u64,
}

/// How one producer behaves.
#[derive(Debug, Clone, Copy)]
pub struct ProducerPlan {
    /// Its number (part of every identity).
    pub id: u16,
    /// The partition it writes.
    pub partition: i32,
    /// Records per second.
    pub rate_per_s: u64,
    /// Payload sizes are uniform in this range.
    pub min_bytes: usize,
    /// Upper end of the payload size range.
    pub max_bytes: usize,
}

/// Produces until `stop` turns true, then flushes and returns the tally.
pub async fn run(
    client: Client,
    plan: ProducerPlan,
    ledger: Arc<Ledger>,
    mut stop: watch::Receiver<bool>,
) -> anyhow::Result<ProducerTally> {
    let producer = client
        .producer(super::TOPIC, ProducerConfig::default())
        .await?;
    let (deliveries, queue) = mpsc::channel(DELIVERY_QUEUE_DEPTH);
    let collector = tokio::spawn(collect(plan, Arc::clone(&ledger), queue));
    let mut ticker = tokio::time::interval(TICK);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let per_tick = plan.rate_per_s as f64 * TICK.as_secs_f64();
    let mut due = 0f64;
    let mut seq = 0u64;
    let mut send_failures = 0u64;
    let mut rng = StdRng::from_os_rng();
    while !*stop.borrow() {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stop.changed() => break,
        }
        due += per_tick;
        while due >= 1.0 {
            due -= 1.0;
            let id = ledger::identity(plan.id, seq);
            let len = rng.random_range(plan.min_bytes..=plan.max_bytes);
            seq += 1;
            match producer
                .send_to(plan.partition, ledger::payload(id, len))
                .await
            {
                Ok(delivery) => {
                    if deliveries.send((id, delivery)).await.is_err() {
                        anyhow::bail!("the delivery collector stopped");
                    }
                }
                Err(error) => {
                    tracing::debug!(%error, "soak send refused");
                    send_failures += 1;
                }
            }
        }
    }
    // Failures of the last batches are reported through their deliveries.
    let _ = producer.flush().await;
    drop(deliveries);
    let mut tally = collector.await??;
    tally.sent = seq;
    tally.failed += send_failures;
    Ok(tally)
}

async fn collect(
    plan: ProducerPlan,
    ledger: Arc<Ledger>,
    mut queue: mpsc::Receiver<(u64, Delivery)>,
) -> anyhow::Result<ProducerTally> {
    let mut tally = ProducerTally::default();
    let mut last_offset = -1i64;
    while let Some((id, delivery)) = queue.recv().await {
        match delivery.await {
            Ok(Some(offset)) => {
                tally.acked += 1;
                if offset <= last_offset {
                    ledger.violation(format!(
                        "producer {}: {id:#x} acknowledged at {offset}, after an earlier record at {last_offset}",
                        plan.id
                    ));
                }
                last_offset = offset;
                ledger.acked(plan.partition, offset, id);
            }
            Ok(None) => anyhow::bail!("soak producers use ack = written; got no offset"),
            Err(error) => {
                tracing::debug!(%error, "soak delivery failed");
                tally.failed += 1;
            }
        }
    }
    Ok(tally)
}
