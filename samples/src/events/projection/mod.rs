//! The projection: a read model folded from the log — replay to catch up, then follow — that
//! answers queries over HTTP and **stores no position**.
//!
//! ```text
//!  per partition:  replay from the log start to its end (as it was) ──► apply each record
//!                  follow from where the replay stopped ──────────────► apply each record
//!  queries:        GET /stats (top users, positions), GET /users/{id}
//! ```
//!
//! # Why it stores no position
//!
//! A read model is two things that must agree: the state (events per user) and the position it
//! reflects (how far into each partition the fold has gone). Persist them separately and a crash
//! between the two writes leaves them disagreeing:
//!
//! * position saved, state not — the restart resumes *after* records whose effect on the state is
//!   gone: those events are silently missing from the model, forever;
//! * state saved, position not — the restart applies records a second time: counts double.
//!
//! Persist only the position (the follow consumer's pattern) and it is worse: the in-memory state
//! is empty after a restart, yet the fold resumes mid-log. So the rule is: **state and position are
//! persisted together, atomically (one snapshot file written with temp-file + rename), or not at
//! all.** By default this projection chooses "not at all": its state lives in memory, its
//! positions live inside that state ([`Projection::positions`]), and a restart rebuilds both by
//! replaying the log from the beginning. That costs a replay at start-up — cheap at a sample's
//! scale — and can never be inconsistent. With [`ProjectionConfig::snapshot`] set it chooses
//! "together": every `every_ms` the model *with* its positions is written to one file
//! ([`snapshot`]), and a restart restores it and catches up from those positions. (The follow
//! consumer's `FileOffsetStore` is the wrong tool for this: a position stored apart from its
//! state.)
//!
//! It runs on any engine ([`LogEngine`]): the fold sees offsets and payloads, never the engine.
//!
//! Each partition becomes live on its own: while some are still catching up the model answers,
//! and `/stats` says `catching_up`.
//!
//! Files: [`model`] (the pure fold), [`snapshot`] (model and positions in one durable file),
//! [`http`] (the query endpoints), this file (the loop).

pub mod http;
pub mod model;
pub mod snapshot;

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde::Serialize;

use snapshot::{MIN_SNAPSHOT_EVERY_MS, SnapshotConfig, SnapshotError};

use crate::engine::{EngineError, LogEngine, LogRecord, PartitionLog, ReadLimits, StartAt};
use crate::events::tally::PartitionTally;
use crate::support::per_partition::{partitions_of, run_per_partition};
use crate::support::retry::backoff;
use crate::support::shutdown::Shutdown;

pub use model::{Projection, TopUser, UserView};

/// Default number of users in the top list.
pub const DEFAULT_TOP_USERS: usize = 10;

/// Which topic to project.
#[derive(Debug, Clone)]
pub struct ProjectionConfig {
    /// The topic.
    pub topic: String,
    /// Read limits (the follow's long-poll wait; the replay does not wait).
    pub limits: ReadLimits,
    /// Save the model with its positions to a file, and restore it on start (`None`: keep
    /// everything in memory and replay the whole log on every start).
    pub snapshot: Option<SnapshotConfig>,
}

/// Why the projection stopped.
#[derive(Debug, thiserror::Error)]
pub enum ProjectionError {
    /// Reading the log failed for good.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The snapshot could not be restored or saved.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
}

/// Where a partition's fold is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Replaying history up to the partition's end seen at start.
    CatchingUp,
    /// Following new records.
    Live,
}

/// The model and each partition's phase, shared by the fold loop and the HTTP handlers.
#[derive(Debug, Default)]
pub struct ProjectionState {
    model: RwLock<Projection>,
    phases: RwLock<BTreeMap<i32, Phase>>,
}

/// The `/stats` view of a projection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProjectionSnapshot {
    /// `live` once every partition has caught up, else `catching_up`.
    pub phase: Phase,
    /// Per partition phase.
    pub phases: BTreeMap<i32, Phase>,
    /// Events folded.
    pub events: u64,
    /// Users seen.
    pub users: usize,
    /// Per partition: one past the last offset folded (in memory, and in the snapshot if any).
    pub next_offset: BTreeMap<i32, i64>,
    /// The most active users.
    pub top_users: Vec<TopUser>,
    /// Redelivered records ignored.
    pub duplicates: u64,
    /// Per-user order violations plus skipped offsets (must be 0).
    pub violations: u64,
    /// Records that are not events.
    pub undecodable: u64,
}

impl ProjectionState {
    /// An empty model.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Read access to the model.
    pub fn model(&self) -> RwLockReadGuard<'_, Projection> {
        self.model
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn model_mut(&self) -> RwLockWriteGuard<'_, Projection> {
        self.model
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn set_phase(&self, partition: i32, phase: Phase) {
        self.phases
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(partition, phase);
    }

    /// True once every partition started has caught up (and at least one has).
    pub fn is_live(&self) -> bool {
        let phases = self
            .phases
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        !phases.is_empty() && phases.values().all(|phase| *phase == Phase::Live)
    }

    /// Counters and the top `top_n` users.
    pub fn snapshot(&self, top_n: usize) -> ProjectionSnapshot {
        let phases = self
            .phases
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let model = self.model();
        let tallies = model.tallies().values();
        ProjectionSnapshot {
            phase: if self.is_live() {
                Phase::Live
            } else {
                Phase::CatchingUp
            },
            phases,
            events: model.events(),
            users: model.user_count(),
            next_offset: model.positions(),
            top_users: model.top_users(top_n),
            duplicates: tallies.clone().map(|t| t.duplicates).sum(),
            violations: tallies.clone().map(PartitionTally::violations).sum(),
            undecodable: tallies.map(|t| t.undecodable).sum(),
        }
    }

    fn apply(&self, partition: i32, records: &[LogRecord]) {
        let mut model = self.model_mut();
        for record in records {
            model.apply(partition, record.offset, &record.payload);
        }
    }
}

/// Folds every partition of `config.topic` into `state`: replay, then follow, until `shutdown`.
/// With a snapshot configured, restores it first (the replay then starts at its positions),
/// saves it every `every_ms` while folding, and once more at the end.
pub async fn run_projection(
    engine: Arc<dyn LogEngine>,
    config: ProjectionConfig,
    state: Arc<ProjectionState>,
    shutdown: Shutdown,
) -> Result<(), ProjectionError> {
    if let Some(snapshot) = &config.snapshot {
        if snapshot.every_ms < MIN_SNAPSHOT_EVERY_MS {
            return Err(SnapshotError::Interval(snapshot.every_ms).into());
        }
        if let Some(model) = snapshot::load(&snapshot.path, &config.topic)? {
            tracing::info!(
                path = %snapshot.path.display(),
                events = model.events(),
                positions = ?model.positions(),
                "projection restored from its snapshot"
            );
            *state.model_mut() = model;
        }
    }
    let partitions = partitions_of(engine.as_ref(), &config.topic, None).await?;
    for &partition in &partitions {
        state.set_phase(partition, Phase::CatchingUp);
    }
    let fold = run_per_partition(partitions, &shutdown, |partition, stop| {
        fold_partition(
            Arc::clone(&engine),
            config.clone(),
            partition,
            Arc::clone(&state),
            stop,
        )
    });
    let Some(snapshot) = &config.snapshot else {
        return Ok(fold.await?);
    };
    let mut fold = std::pin::pin!(fold);
    let mut every = tokio::time::interval(std::time::Duration::from_millis(snapshot.every_ms));
    let outcome = loop {
        tokio::select! {
            outcome = &mut fold => break outcome,
            _ = every.tick() => save_snapshot(&state, &config.topic, snapshot).await?,
        }
    };
    // The last one: a clean stop restarts exactly here.
    save_snapshot(&state, &config.topic, snapshot).await?;
    Ok(outcome?)
}

/// Writes the model with its positions, encoded under the read lock: one moment's state.
async fn save_snapshot(
    state: &ProjectionState,
    topic: &str,
    config: &SnapshotConfig,
) -> Result<(), SnapshotError> {
    let bytes = snapshot::encode(topic, &state.model());
    snapshot::save(&config.path, bytes).await
}

async fn fold_partition(
    engine: Arc<dyn LogEngine>,
    config: ProjectionConfig,
    partition: i32,
    state: Arc<ProjectionState>,
    stop: Shutdown,
) -> Result<(), EngineError> {
    // From the log start — the position is not stored, because the state is not — or from the
    // position of a restored snapshot, which is stored *with* the state.
    let start = state
        .model()
        .positions()
        .get(&partition)
        .map_or(StartAt::Earliest, |&at| StartAt::At(at));
    let Some((log, mut position, mut end_offset)) =
        open_partition(engine.as_ref(), &config, partition, start, &stop).await?
    else {
        return Ok(());
    };
    // The replay: what is there, up to the end as it was at the start, without waiting.
    let replay = ReadLimits {
        wait: std::time::Duration::ZERO,
        ..config.limits
    };
    let mut limits = replay;
    let mut live = false;
    loop {
        if !live && position >= end_offset {
            live = true;
            limits = config.limits;
            state.set_phase(partition, Phase::Live);
            tracing::info!(
                partition,
                caught_up_to = end_offset,
                "projection caught up; following"
            );
        }
        let read = tokio::select! {
            biased;
            () = stop.triggered() => return Ok(()),
            read = log.read(position, limits) => read,
        };
        match read {
            // Follow from exactly where the replay ended: the same position, the same log.
            Ok(batch) => {
                if batch.records.is_empty() && !live {
                    // Nothing below the end it reported after all: the replay is done.
                    end_offset = position;
                }
                state.apply(partition, &batch.records);
                position = batch.next_offset;
            }
            Err(error) if error.is_transient() => {
                tracing::warn!(partition, %error, position, "read failed; retrying");
                if !backoff(&stop).await {
                    return Ok(());
                }
            }
            Err(error) => return Err(error),
        }
    }
}

/// The partition's log, the offset `start` means there, and the end the replay goes to, waiting
/// out transient failures. `None` when stopped meanwhile.
async fn open_partition(
    engine: &dyn LogEngine,
    config: &ProjectionConfig,
    partition: i32,
    start: StartAt,
    stop: &Shutdown,
) -> Result<Option<(Arc<dyn PartitionLog>, i64, i64)>, EngineError> {
    loop {
        let opened = async {
            let log = engine.open(&config.topic, partition).await?;
            let bounds = log.bounds().await?;
            Ok::<_, EngineError>((log, start.offset_in(bounds), bounds.end))
        }
        .await;
        match opened {
            Ok(opened) => return Ok(Some(opened)),
            Err(error) if error.is_transient() => {
                tracing::warn!(partition, %error, "cannot start the projection yet; retrying");
                if !backoff(stop).await {
                    return Ok(None);
                }
            }
            Err(error) => return Err(error),
        }
    }
}
