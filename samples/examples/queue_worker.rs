//! The claim protocol in one loop: two followers fold `tasks` and `claims` into a `QueueState`;
//! pick a task, append a claim (FORCED), wait until the claims follower has applied **the claim's
//! own offset**, read the verdict there; if won, work, commit the effect through the fencing sink
//! under the token (= that offset), append `done(token)`. Copy this; the production version is
//! `src/queue/worker/run.rs` (extends, a local deadline, retries, adoption, events, stats).
//!
//! Run: `cargo run --release -p booblik-samples --example queue_worker` (an embedded broker),
//! or with `-- --broker host:port` against a running one.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use booblik_client::{
    AckPolicy, Batch, Client, Connection, ConsumerConfig, StartPosition, TopicName,
};
use booblik_protocol::RecordSet;
use booblik_samples::queue::pick::Pick;
use booblik_samples::queue::record::{Claim, ClaimsRecord, Done, Task};
use booblik_samples::queue::state::{Event, QueueConfig, QueueState};
use booblik_samples::queue::worker::{ResultSink, result_of, submit_task, wall_clock_ms};
use booblik_samples::support::example::{ExampleArgs, ExampleBroker};
use clap::Parser;
use tokio::sync::watch;
use uuid::Uuid;

const TASKS: usize = 3;
/// The work below is instant, far shorter than this: no extends needed.
const LEASE_MS: u64 = 5_000;
const VERDICT_TIMEOUT: Duration = Duration::from_secs(10);

/// The queue as the two followers have applied it, and the verdict on each claims record.
struct View {
    state: QueueState,
    verdicts: HashMap<i64, Event>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    run(ExampleArgs::parse()).await
}

pub async fn run(args: ExampleArgs) -> anyhow::Result<()> {
    let broker = ExampleBroker::connect(&args).await?;
    for n in 0..TASKS {
        submit_task(&broker.client, "tasks", format!("task {n}").into_bytes()).await?;
    }
    let (worker_id, sink) = (Uuid::new_v4(), ResultSink::new());
    let view = View {
        state: QueueState::new(QueueConfig::default()),
        verdicts: HashMap::new(),
    };
    let (view, mut seen) = watch::channel(view);
    // Both from Earliest: a verdict is a fold over the whole claims log.
    let view = Arc::new(view);
    tokio::spawn(follow(broker.client.clone(), "tasks", Arc::clone(&view)));
    tokio::spawn(follow(broker.client.clone(), "claims", view));
    let connection = broker.client.open_connection().await?;
    let mut completed = 0;
    while completed < TASKS {
        // 1. Pick a claimable task (the clock only proposes; the log decides).
        let now_ms = wall_clock_ms();
        let view = seen.borrow_and_update();
        let picked = view.state.pick(now_ms, Pick::Random, &mut rand::rng());
        drop(view);
        let Some(task_id) = picked else {
            seen.changed().await?; // wait for either log to move
            continue;
        };
        // 2. Claim it, FORCED: the verdict must come from a durable prefix of the log.
        let claim = Claim {
            task_id,
            worker_id,
            claimed_at_ms: wall_clock_ms(),
            lease_ms: LEASE_MS,
        };
        let offset = append(&connection, claim.into()).await?;
        // 3. The verdict is the event at the claim's own offset, once the follower is past it.
        let Event::ClaimWon { token, .. } = verdict_at(&mut seen, offset).await? else {
            println!("claim at {offset} on task {task_id} lost");
            continue;
        };
        // 4. Work, and commit the effect through the fencing sink under the token.
        sink.fence(task_id, token)?;
        let task = seen.borrow().state.task(task_id).cloned();
        let submission = task.and_then(|t| t.submission).context("task not read")?;
        let result = result_of(&submission.payload);
        sink.commit(task_id, token, result.clone())?;
        // 5. done(token): accepted only while the token is current.
        let done = Done {
            task_id,
            worker_id,
            token,
            done_at_ms: wall_clock_ms(),
            result,
        };
        let offset = append(&connection, done.into()).await?;
        let verdict = verdict_at(&mut seen, offset).await?;
        println!("task {task_id}: won with token {token}, effect committed, {verdict:?}");
        completed += usize::from(matches!(verdict, Event::DoneAccepted { .. }));
    }
    let refused = sink.refused();
    println!("{completed} tasks completed; {refused} effects refused");
    broker.shutdown().await
}

/// One follower: one partition from its first record, applied to the view in log order.
async fn follow(client: Client, topic: &str, view: Arc<watch::Sender<View>>) -> anyhow::Result<()> {
    let consumer = client.consumer(topic, 0, StartPosition::Earliest, ConsumerConfig::default());
    let mut follow = consumer.await?.follow();
    loop {
        let batch = follow.next_batch().await?;
        let mut applied = Ok(());
        view.send_modify(|view| applied = apply(view, topic, &batch));
        applied?;
    }
}

/// Applies a batch in order; undecodable records are skipped (every reader skips the same).
fn apply(view: &mut View, topic: &str, batch: &Batch) -> anyhow::Result<()> {
    for record in &batch.records {
        if topic == "tasks" {
            if let Ok(task) = Task::decode(&record.payload) {
                view.state.apply_task(record.offset, &task)?;
            }
        } else if let Ok(claim) = ClaimsRecord::decode(&record.payload) {
            let verdict = view.state.apply_claims_record(record.offset, &claim)?;
            view.verdicts.insert(record.offset, verdict);
        }
    }
    Ok(())
}

/// Appends one record to the claims partition and returns its offset once it is durable.
async fn append(connection: &Connection, record: ClaimsRecord) -> anyhow::Result<i64> {
    let records = RecordSet::from_payloads([record.encode()])?;
    let claims = TopicName::new("claims")?;
    let response = connection.produce(&claims, 0, AckPolicy::Forced, records);
    Ok(response.await?.context("no offset")?.base_offset) // FORCED answers with it
}

/// Waits until the claims follower has applied `offset`, then takes the verdict on it.
async fn verdict_at(seen: &mut watch::Receiver<View>, offset: i64) -> anyhow::Result<Event> {
    let passed = seen.wait_for(|view| view.state.last_claims_offset() >= Some(offset));
    let view = tokio::time::timeout(VERDICT_TIMEOUT, passed).await??;
    view.verdicts.get(&offset).cloned().context("no verdict")
}
