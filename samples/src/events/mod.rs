//! Layer 1: keyed events, follow/replay consumers, and a projection.
//!
//! A publisher writes [`UserEvent`]s keyed by user to a topic of several
//! partitions; three kinds of reader consume them, each showing one pattern of working with a log:
//!
//! * the **follow consumer** keeps up with new records and saves its position after each handled
//!   batch, so a restart resumes where it was (at-least-once);
//! * the **replay consumer** reads history up to the high watermark and ends with a summary;
//! * the **projection** folds the log into a read model — replay to catch up, then follow — and
//!   keeps state and position together, in memory, rebuilding both from the log on start.
//!
//! Every role is a library function here, and its binary (`src/bin/`) is flags around it, so the
//! demo runs the very same code in one process. Every role takes a [`LogEngine`](crate::engine::LogEngine)
//! — booblik or NATS JetStream — and never asks which one it got: it sees offsets and payloads,
//! and asks the engine where a partition begins and ends.
//!
//! # Layout
//!
//! | file | role | what it shows |
//! |---|---|---|
//! | `event.rs` | the record | [`UserEvent`], versioned postcard encoding, why each field |
//! | `tally.rs` | every reader's checks | per-user order, duplicates recognised by offset, skipped offsets, undecodable records |
//! | `publisher.rs` | publisher | keyed sends, one batching writer per partition, what was acknowledged, rate pacing |
//! | `follow.rs` | follow consumer | resume from the `FileOffsetStore`, checkpoint *after* handling, clean stop |
//! | `recheck.rs` | follow consumer | after a reconnect, re-read the last applied record: a log rewritten under the position stops the consumer |
//! | `replay.rs` | replay consumer | history to the high watermark, a summary, re-runnable |
//! | `projection/model.rs` | projection | the read model as a pure, offset-idempotent fold |
//! | `projection/mod.rs` | projection | replay then follow; why no position is stored apart from the state |
//! | `projection/snapshot.rs` | projection | the option: model and positions in one durable file, restored on start |
//! | `projection/http.rs` | projection | queries: `GET /stats`, `GET /users/{id}` |
//! | `crosscheck.rs` | auditing | a replay as the reference for what every other reader saw |
//!
//! Shared plumbing (flags, shutdown, retries, stats over HTTP, one task per partition) is in
//! [`crate::support`]. `samples/README.md` maps each pattern to its file and names the guarantees.
//!
//! # The guarantees, in one place
//!
//! * **Per-key order**: one user's events share a partition (key = user id, the shared FNV-1a
//!   partitioner) and every reader sees them in the order they were sent. Across partitions there
//!   is no order.
//! * **At-least-once**: the follow consumer handles a batch, then saves `next_offset`. A crash in
//!   between repeats at most that batch; nothing is skipped. Duplicates are counted, by offset,
//!   and are not order violations. The limit: a reader is served up to the high watermark, which
//!   includes records written but not yet fsynced. A crash of the broker's *machine* (not of its
//!   process: the page cache survives that) can lose them, and their offsets are then reused by
//!   new records, which a reader that already read and checkpointed past the lost ones skips.
//!   Publishing with FORCED keeps a publisher's own acknowledged records; it does not stop readers
//!   from seeing others' unsynced ones (see "The limit" in `samples/README.md`).
//! * **Rebuildable read model**: the projection is a function of the log; restarting it replays.

pub mod crosscheck;
pub mod event;
pub mod follow;
pub mod projection;
pub mod publisher;
pub mod recheck;
pub mod replay;
pub mod tally;

pub use event::{EventKind, UserEvent};
pub use follow::{FollowConfig, FollowError, FollowSnapshot, FollowState, run_follow};
pub use projection::{
    Projection, ProjectionConfig, ProjectionError, ProjectionState, run_projection,
};
pub use publisher::{
    PublishError, PublisherConfig, PublisherSnapshot, PublisherStats, run_publisher,
};
pub use replay::{ReplayConfig, ReplayRange, ReplaySummary, replay, replay_partition};
pub use tally::PartitionTally;
