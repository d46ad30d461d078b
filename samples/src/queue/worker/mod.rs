//! The worker: runs the claims-and-leases protocol over a log engine (booblik, or JetStream:
//! [`crate::engine`]); the protocol code it drives sees offsets, never the engine.
//!
//! ```text
//! start:  refuse a claims log that retention truncated (its start above the engine's origin)
//!         follow `tasks` and `claims` from their start (two followers, one QueueState; after a
//!         reconnect each re-checks its last record: a rewritten log stops the worker)
//! run:    wait until both are applied up to the high watermarks seen at start
//! loop:   pick a claimable task (Pick::Random by default)
//!           none  → wait for the followers to apply something, or for the next lease to
//!                   lapse (never a busy loop); a rendezvous worker heartbeats every lease/2
//!           rendezvous, another idle worker ranks it first → defer (bounded), then claim
//!         append Claim (ack FORCED)           → offset o: the token, should it win
//!           (with the previous task's Done in the same batch, if one is waiting: one round
//!           trip and one fsync for both; its verdict is read first)
//!         wait until the claims follower has applied o → the verdict on o
//!           lost  → loop
//!           won   → work; every lease/3 append Extend(token) and wait for its verdict
//!                     void → lease lost: abandon the work
//!                     no renewal confirmed by the local deadline → lease lost: abandon it
//!                   the Done(token, result) rides with the next claim; with nothing to
//!                   claim it is appended alone at once, and its verdict read
//! stop:   drop the work; at protocol level 2 append Release(token) for a task in hand
//! ```
//!
//! # Why claims are FORCED by default
//!
//! The broker makes a record readable once it is written, before it is durable. A verdict is a
//! function of the prefix of the claims log up to the claim. If a worker acted on a verdict
//! derived from records that a broker crash then loses, the next appends would reuse those
//! offsets for different records: the worker's token would name someone else's claim, and two
//! workers could hold the same task with the same token. A FORCED acknowledgement means an
//! fsync covered the claim and therefore the whole prefix before it — exactly the records the
//! verdict depends on — so the worker acts on a verdict only after its append is acknowledged.
//! WRITTEN is available for measurement (`claim_ack`), not as a safe choice.
//!
//! # Files
//!
//! | file | concept |
//! |---|---|
//! | `run.rs` | the [`Worker`]: start, the loop, one claim from pick to verdict, holding a lease (work, extends, done, the local deadline) |
//! | `view.rs` | the live [`QueueState`](crate::queue::state::QueueState) fed by the two followers (each re-checks its last record after a reconnect); own verdicts by worker and offset |
//! | `pool.rs` | [`WorkerPool`]: the workers of one process sharing one pair of followers, picking around each other |
//! | `config.rs` | [`WorkerConfig`] and its validation |
//! | `work.rs` | the work function ([`WorkFn`]), simulated by default |
//! | `sink.rs` | [`ResultSink`]: a fencing sink for effects; [`ResultSink::fencing`] wraps a work function |
//! | `adoption.rs` | the edge case: adopting a lease of this run whose claim acknowledgement was lost |
//! | `observe.rs`, `event.rs`, `stats.rs` | plumbing: [`WorkerEvent`]s, [`WorkerStats`] and log lines, off the claim path |
//! | `freeze.rs`, `own_thread.rs` | showing fencing: [`Freeze`] blocks one worker's thread past its lease; [`spawn_on_own_thread`] gives a worker a thread to block |
//! | `submit.rs`, `logs.rs` | enqueueing a task; reading both logs for the verifier |
//! | `cli.rs` | plumbing for the `queue-*` binaries |

mod adoption;
pub mod cli;
mod config;
mod event;
mod freeze;
mod logs;
mod observe;
mod own_thread;
mod pool;
mod run;
mod sink;
mod stats;
mod submit;
mod view;
mod work;

pub use crate::support::clock::wall_clock_ms;
pub use adoption::MAX_UNACKNOWLEDGED_CLAIMS;
pub use cli::DEFAULT_CONNECT_WAIT_MS;
pub use config::{
    DEFAULT_FOLLOW_MAX_WAIT_MS, DEFAULT_LEASE_MS, DEFAULT_WORK_MS, EXTENDS_PER_LEASE,
    MAX_FOLLOW_MAX_WAIT_MS, MAX_LEASE_MS, MIN_EXTENDS_PER_LEASE, WorkerConfig, WorkerConfigError,
};
pub use event::WorkerEvent;
pub use freeze::{Freeze, Frozen, MAX_FREEZE_MS};
pub use logs::{MAX_READ_ATTEMPTS, read_logs, read_raw_logs};
pub use observe::MAX_QUEUED_EVENTS;
pub use own_thread::{ConnectFn, OwnThreadWorker, spawn_on_own_thread, spawn_on_own_thread_with};
pub use pool::{MAX_POOL_WORKERS, WorkerPool};
pub use run::{
    APPEND_RETRY_BACKOFF_MS, ClaimsLogTruncated, DEFAULT_CLOCK_SKEW_PERCENT, HEARTBEATS_PER_LEASE,
    MAX_APPEND_RETRY_BACKOFF_MS, MAX_CONSECUTIVE_APPEND_FAILURES, MAX_DONE_ATTEMPTS,
    MAX_IDLE_WAIT_MS, RELEASE_TIMEOUT_MS, RENDEZVOUS_LOST_RACE_BACKOFF_MS,
    RENDEZVOUS_MAX_DEFERENCE_MS, VERDICT_TIMEOUT_MS, Worker, append_retry_backoff,
    local_lease_deadline,
};
pub use sink::{Committed, MAX_SINK_TASKS, Refused, ResultSink};
pub use stats::WorkerStats;
pub use submit::{open_tasks_log, submit_task, submit_task_to};
pub use view::{
    JoinError, MAX_CONSECUTIVE_FOLLOW_FAILURES, MAX_KEPT_OWN_VERDICTS, StateView, ViewError,
};
pub use work::{Assignment, WorkFn, result_of, simulated_work, work_for};
