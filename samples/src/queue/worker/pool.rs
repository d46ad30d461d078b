//! A worker pool: the workers of one process sharing one pair of followers.
//!
//! # Why
//!
//! Every worker folds the whole claims log: the verdict on its claim is a function of every
//! record before it. Started on their own, N workers on one machine each run two followers, so
//! the broker answers 2N long polls and sends every claims record N times, and the machine folds
//! it N times into N copies of the same [`QueueState`](crate::queue::state::QueueState). At 30
//! workers that is 60 long polls woken by every claim — the reason a claim round trip grows
//! with the number of workers even while the log itself is idle (`docs/experiments/task-queue.md`).
//!
//! A pool reads each record once, folds it once, and hands each member the verdicts on its own
//! records (`view.rs` keeps them apart by worker id).
//!
//! # What is shared, and what is not
//!
//! | shared by the pool | each member's own |
//! |---|---|
//! | the `tasks` and `claims` followers | its worker id, its records |
//! | the live state they feed | its appender (on booblik, its own connections) |
//! | | its lease timers, its local deadline, its work |
//! | | what it knows of its failed appends (`adoption.rs`) |
//!
//! The protocol stays per worker: each member claims, extends and finishes under its own id and
//! its own tokens, and the log decides every race exactly as between two processes. A pool is a
//! shared *reading* of the log, not a coordinator: two pools on two machines race in the log as
//! two workers do.
//!
//! One thing a pool knows that separate workers cannot: which task each member is claiming right
//! now. Siblings pick around each other ([`Pick::choose_around`](crate::queue::pick::Pick::choose_around)),
//! so no claim round trip is lost to a sibling that was known to be claiming the same task. The
//! mark lasts from the pick until the member takes its verdict; it is a hint for picking, never
//! a verdict.
//!
//! # Failure
//!
//! The followers are the pool's, so when one stops (a rewritten log, an engine that stays
//! unreachable) every member stops with it. A member that stops or is dropped leaves the pool;
//! the followers run as long as the pool or any member is alive.
//!
//! # Threads
//!
//! The followers run on the runtime that started the pool. A member may run on another runtime —
//! on a thread of its own ([`spawn_on_own_thread_with`](super::spawn_on_own_thread_with), the
//! load harness): blocking that thread then pauses that member only, its timers included, while
//! the followers and the other members go on. The view is shared through a mutex and a watch
//! channel, which work across runtimes.

use std::sync::Arc;

use anyhow::Context;
use tokio::task::JoinHandle;

use super::view::{self, LiveView};
use super::{WorkFn, Worker, WorkerConfig};
use crate::engine::{IntoEngine, LogEngine, PartitionLog};
use crate::queue::state::{LogName, QueueConfig};

/// The most workers one pool (one view) keeps verdicts for. Each pick looks past the tasks the
/// other members are claiming, so a pick costs up to this many comparisons; far beyond the
/// workers one process runs usefully.
pub const MAX_POOL_WORKERS: usize = 256;

/// Workers of one process sharing one view of the queue (one follower per log). Clone it to hand
/// it to the threads that start members; the followers stop when the pool and every member are
/// gone.
#[derive(Debug, Clone)]
pub struct WorkerPool {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    view: Arc<LiveView>,
    followers: Vec<JoinHandle<()>>,
    /// The engine the followers read through, and their partitions: a member on this same
    /// engine appends through the claims partition's own write connection instead of opening
    /// the logs again.
    engine: Arc<dyn LogEngine>,
    tasks: Arc<dyn PartitionLog>,
    claims: Arc<dyn PartitionLog>,
    /// What every member must agree on: the logs it reads and the rules it judges by.
    tasks_topic: String,
    claims_topic: String,
    queue: QueueConfig,
    follow_max_wait_ms: u64,
}

impl Drop for Shared {
    fn drop(&mut self) {
        for follower in &self.followers {
            follower.abort();
        }
    }
}

impl WorkerPool {
    /// Starts the two followers of the logs `config` names, from each partition's start, on the
    /// current runtime. `config` is the members' template: every member must name the same
    /// topics and the same [`QueueConfig`], and (like a worker) the pool refuses a claims log
    /// that retention truncated ([`ClaimsLogTruncated`](super::ClaimsLogTruncated)).
    pub async fn start(engine: impl IntoEngine, config: &WorkerConfig) -> anyhow::Result<Self> {
        config.validate()?;
        let engine = engine.into_engine();
        let tasks = single_partition_log(engine.as_ref(), &config.tasks_topic).await?;
        let claims = single_partition_log(engine.as_ref(), &config.claims_topic).await?;
        let tasks_start = bounds_of(tasks.as_ref(), &config.tasks_topic).await?.start;
        let claims_start = claims_start(claims.as_ref(), &config.claims_topic).await?;
        let view = Arc::new(LiveView::new(config.queue, (tasks_start, claims_start)));
        let limits =
            view::follow_limits(std::time::Duration::from_millis(config.follow_max_wait_ms));
        let followers = vec![
            view::spawn_follower(
                Arc::clone(&tasks),
                tasks_start,
                limits,
                LogName::Tasks,
                Arc::clone(&view),
            ),
            view::spawn_follower(
                Arc::clone(&claims),
                claims_start,
                limits,
                LogName::Claims,
                Arc::clone(&view),
            ),
        ];
        Ok(Self {
            shared: Arc::new(Shared {
                view,
                followers,
                engine,
                tasks,
                claims,
                tasks_topic: config.tasks_topic.clone(),
                claims_topic: config.claims_topic.clone(),
                queue: config.queue,
                follow_max_wait_ms: config.follow_max_wait_ms,
            }),
        })
    }

    /// Starts a member that does simulated work ([`simulated_work`](super::simulated_work)).
    pub async fn start_worker(
        &self,
        engine: impl IntoEngine,
        config: WorkerConfig,
    ) -> anyhow::Result<Worker> {
        let work = super::simulated_work(config.work_ms);
        self.start_worker_with_work(engine, config, work).await
    }

    /// Starts a member with a work function of its own. It appends through `engine` (which may
    /// be another connection than the pool's, on another runtime) and learns its verdicts from
    /// the pool's view. Refuses a config that names other topics or another [`QueueConfig`] than
    /// the pool's (its verdicts would be judged by rules it does not hold), and an id that is a
    /// member already.
    pub async fn start_worker_with_work(
        &self,
        engine: impl IntoEngine,
        config: WorkerConfig,
        work: WorkFn,
    ) -> anyhow::Result<Worker> {
        config.validate()?;
        let shared = &self.shared;
        anyhow::ensure!(
            config.tasks_topic == shared.tasks_topic && config.claims_topic == shared.claims_topic,
            "worker {} reads {}/{}, the pool reads {}/{}",
            config.worker_id,
            config.tasks_topic,
            config.claims_topic,
            shared.tasks_topic,
            shared.claims_topic
        );
        anyhow::ensure!(
            config.queue == shared.queue,
            "worker {} judges by {:?}, the pool by {:?}: every reader must judge alike",
            config.worker_id,
            config.queue,
            shared.queue
        );
        anyhow::ensure!(
            config.follow_max_wait_ms == shared.follow_max_wait_ms,
            "worker {} asks for follow_max_wait_ms {}, the pool's followers wait {}",
            config.worker_id,
            config.follow_max_wait_ms,
            shared.follow_max_wait_ms
        );
        let engine = engine.into_engine();
        let (tasks, claims) = if Arc::ptr_eq(&engine, &shared.engine) {
            (Arc::clone(&shared.tasks), Arc::clone(&shared.claims))
        } else {
            (
                single_partition_log(engine.as_ref(), &config.tasks_topic).await?,
                single_partition_log(engine.as_ref(), &config.claims_topic).await?,
            )
        };
        let tasks_end = bounds_of(tasks.as_ref(), &config.tasks_topic).await?.end;
        let claims_end = bounds_of(claims.as_ref(), &config.claims_topic).await?.end;
        // Joined before the member's first append, with the claims end read now: every record
        // of this run lands at `claims_end` or later, and its verdict is kept from the start.
        shared
            .view
            .join(config.worker_id, claims_end)
            .context("cannot join the pool")?;
        Worker::member(
            self.clone(),
            engine.kind(),
            claims,
            config,
            work,
            (tasks_end, claims_end),
        )
    }

    /// The view the members share.
    pub(super) fn view(&self) -> &Arc<LiveView> {
        &self.shared.view
    }
}

/// Opens partition 0 of `name`, which must have exactly one partition: the protocol needs one
/// total order per log.
pub(super) async fn single_partition_log(
    engine: &dyn LogEngine,
    name: &str,
) -> anyhow::Result<Arc<dyn PartitionLog>> {
    let partitions = engine
        .partition_count(name)
        .await
        .with_context(|| format!("cannot read the partitions of topic {name}"))?;
    anyhow::ensure!(
        partitions == 1,
        "topic {name} has {partitions} partitions; the task queue needs exactly one (one total order)"
    );
    engine
        .open(name, 0)
        .await
        .with_context(|| format!("cannot open topic {name}"))
}

async fn bounds_of(log: &dyn PartitionLog, topic: &str) -> anyhow::Result<crate::engine::Bounds> {
    log.bounds()
        .await
        .with_context(|| format!("cannot read the bounds of {topic}"))
}

/// The claims log's start, refusing one that retention truncated: the first record still
/// readable above the origin means this pool's verdicts would be its own.
async fn claims_start(claims: &dyn PartitionLog, topic: &str) -> anyhow::Result<i64> {
    let bounds = bounds_of(claims, topic).await?;
    if bounds.start > bounds.origin {
        return Err(super::ClaimsLogTruncated {
            topic: topic.to_owned(),
            log_start_offset: bounds.start,
            origin: bounds.origin,
        }
        .into());
    }
    Ok(bounds.start)
}
