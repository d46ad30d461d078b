//! The broker's log storage: per partition, a sequence of segment files with gap-free offsets,
//! one writer thread with group commit, crash recovery, and retention.
//!
//! # On disk
//!
//! ```text
//! <data_dir>/.lock                         advisory lock: one broker per data directory
//! <data_dir>/<topic>-<partition>/%020d.log segments, named by the offset of their first record
//! record: int32 length (≥ 1) | int32 crc32c(payload) | payload
//! ```
//!
//! A segment is a plain concatenation of records; a zero length (or the end of the file) ends
//! it. The same bytes are what a FETCH sends, unparsed. `docs/storage.md` describes the format,
//! recovery, durability per ack policy and write mode, and retention in prose.
//!
//! # Layout
//!
//! | module | concept |
//! |---|---|
//! | [`config`] | [`StorageConfig`], [`WriteMode`], limits |
//! | `error` | [`StorageError`] |
//! | `registry` | [`Storage`]: all partitions, the data directory lock |
//! | `partition` | [`Partition`]: append (whole or queued; inline when idle), locate and slice for FETCH, long-poll wait, stats |
//! | `writer` | the writer thread, its bounded queue, group commit, the log's lock |
//! | `log` | the writer's view of a partition: append, roll, sync, retention |
//! | `log_view` | what readers see: segment list, high watermark, the read path |
//! | `segment` | one segment file shared by readers and the writer; pinning and deletion |
//! | `active` | appending to the active segment in MAPPED or FILE mode |
//! | `mapping` | the memory mapping (the storage's only `unsafe`) |
//! | `index` | the sparse offset index |
//! | `recovery` | validating segments on open, torn tails vs corruption |
//! | `retention` | which old segments to drop |
//! | `io` | [`StorageIo`]: the seam every file change and fsync goes through; [`RealIo`] |
//! | `durability` | every fsync, in one place |
//! | `poison` | the state after an fsync failure |
//! | `read_slice` | [`ReadSlice`]: the bytes of a FETCH, pinning their segment |
//! | `metrics` | metric names, [`PartitionStats`] |
//! | `hooks` | the cold-read gate for tests (hidden; empty without the `test-io` feature) |
//! | [`test_io`] | with the `test-io` feature: a simulated I/O with faults and power loss |

mod active;
pub mod config;
mod durability;
mod error;
mod hooks;
mod index;
mod io;
mod log;
mod log_view;
mod mapping;
mod metrics;
mod partition;
mod poison;
mod read_slice;
mod recovery;
mod registry;
mod retention;
mod segment;
#[cfg(any(test, feature = "test-io"))]
pub mod test_io;
mod writer;

pub use config::{StorageConfig, UnknownWriteMode, WriteMode};
pub use error::StorageError;
#[doc(hidden)]
pub use hooks::TestHooks;
#[cfg(feature = "test-io")]
#[doc(hidden)]
pub use hooks::gate::ColdReadHold;
pub use io::{MappedRange, RealIo, StorageIo};
pub use log::Appended;
pub use log_view::FetchPosition;
pub use metrics::{
    APPENDED_RECORDS_TOTAL, FSYNC_GROUP_SIZE, FSYNCS_TOTAL, INLINE_APPENDS_TOTAL,
    INLINE_SYNCS_TOTAL, NO_SPACE_REFUSALS_TOTAL, PartitionStats, RECOVERY_QUARANTINES_TOTAL,
    ROLL_SECONDS, RecoveredEnd, describe_metrics,
};
pub use partition::{AppendAnswer, Partition, Written};
pub use read_slice::{CACHE_PROBE_STRIDE_BYTES, ReadSlice};
pub use registry::{LOCK_FILE_NAME, Storage};
