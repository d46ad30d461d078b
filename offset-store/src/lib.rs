//! Durable consumer positions for booblik.
//!
//! The broker keeps no consumer state: a consumer's position (the next offset it will read)
//! belongs to the consumer. This crate is where it keeps it between runs. A position must
//! outlive the process and must never come back *wrong*: too far ahead silently skips records,
//! too far behind silently replays them. So a save is crash-safe, and a damaged file is an
//! error that names the file, never `None` and never a guess.
//!
//! ```
//! use booblik_offset_store::{FileOffsetStore, OffsetStore};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let store = FileOffsetStore::open(dir.path()).await?;
//! assert_eq!(store.load("billing", "events", 0).await?, None); // never saved: start fresh
//!
//! store.save("billing", "events", 0, 42).await?; // after processing a batch ending at 41
//! drop(store);
//!
//! let reopened = FileOffsetStore::open(dir.path()).await?;
//! assert_eq!(reopened.load("billing", "events", 0).await?, Some(42)); // resume at 42
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//!
//! | item | what it is |
//! |---|---|
//! | [`OffsetStore`] (`store`) | the trait: `load` / `save` of one offset per consumer, topic, partition; also implemented for `Arc<T>` and `Box<T>` |
//! | [`FileOffsetStore`] (`file_store`) | the durable store: per-key ordering, blocking work off the async threads |
//! | `durable` (private) | the blocking file work of a save and a load |
//! | [`durable_file`] | replacing any whole file durably: temp + fsync + rename + directory fsync, for snapshots and the like |
//! | `layout` (private) | where a key's files live: `<dir>/<consumer>/<topic>/<partition>.offset` |
//! | `name_encoding` (private) | escaping arbitrary names into one safe, reversible path component |
//! | [`format`](mod@format) | the bytes of an offset file: magic, version, key, offset, CRC-32C |
//! | [`InMemoryOffsetStore`] (`memory`) | the same contract in a `HashMap`, for tests |
//! | [`OffsetKey`] (`key`) | key validation shared by every store |
//! | [`OffsetStoreError`] (`error`) | what went wrong, naming the file when a file is at fault |
//!
//! # On disk
//!
//! ```text
//! <dir>/
//!   <consumer, escaped>/
//!     <topic, escaped>/
//!       <partition>.offset       26 + len(consumer) + len(topic) bytes, see format
//!       <partition>.offset.tmp   a save in flight or an interrupted one; never read
//! ```
//!
//! Names are escaped byte by byte: letters, digits, `_`, `-` and a non-leading `.` are kept,
//! everything else becomes `%XX`. So `../../etc` is the single entry `%2E.%2F%2E.%2Fetc`, and a
//! name can never leave `<dir>`. Each escaped name must fit in 255 bytes (a file-system limit),
//! checked up front with a clear [`KeyProblem`].
//!
//! # What a save costs, and how often to save
//!
//! A save is two fsyncs (the temp file and the directory) plus an open, a write and a rename;
//! the first save of a key in a process adds two more directory fsyncs. The fsyncs dominate, so
//! the cost is the disk's flush latency, not CPU. Measured with
//! `cargo bench -p booblik-offset-store --bench save_cost` on the development VM (`nproc` = 2,
//! Intel Xeon @ 2.3 GHz, ext4 on a virtio disk), while other builds kept the load average near
//! 6; two runs, criterion's mean per iteration (its 95 % interval in brackets):
//!
//! | benchmark | run 1 | run 2 |
//! |---|---|---|
//! | `file_save_one_key`: one save, awaited | 7.7 ms [6.3, 9.3] | 3.3 ms [2.3, 5.0] |
//! | `file_save_8_keys_concurrently`: 8 saves, different keys, awaited together | 4.7 ms [4.4, 5.1] | 3.3 ms [2.9, 3.7] |
//! | `file_load` | 161 µs [122, 198] | 134 µs [99, 172] |
//! | `memory_save` (`InMemoryOffsetStore`) | 0.45 µs | 0.58 µs |
//!
//! Eight saves to different keys cost about as much as one: their fsyncs overlap (the file
//! system can commit them in one journal flush), which is why keys never wait for each other
//! here. But a save per record would cap a consumer at a few hundred records per second on this
//! machine, whatever the broker can do. **Checkpoint per batch, not per record:** process a fetched batch, then save
//! its `next_offset` once. Delivery stays at-least-once either way (a crash replays the records
//! since the last save), and a larger batch only widens that replay window. If a handler's
//! effects must never repeat, store the position *with* the effects (in the same transaction or
//! file), as SPEC §6 asks of the projection sample, instead of here.
//!
//! # Guarantees
//!
//! * After `save` returns `Ok`, a reopen (even after `SIGKILL` or a power cut) loads that offset
//!   or a later save's, never a torn mix: the rename is atomic and ordered after the data fsync.
//!   The `SIGKILL` half is tested (a saver killed 50 times at random moments); the power-cut
//!   half rests on the fsync ordering described in `durable`.
//! * A torn, truncated, bit-flipped or foreign file is [`OffsetStoreError::Corrupt`], naming
//!   the path. A missing file is `Ok(None)`.
//! * Saves for different keys run in parallel; saves for one key take effect in call order.
//! * One writer process per key. Several processes may share a directory with disjoint keys.

pub mod durable_file;
pub mod format;

mod durable;
mod error;
mod file_store;
mod key;
mod layout;
mod memory;
mod name_encoding;
mod store;

pub use error::{IoStep, KeyProblem, OffsetStoreError};
pub use file_store::FileOffsetStore;
pub use format::FormatError;
pub use key::OffsetKey;
pub use memory::InMemoryOffsetStore;
pub use name_encoding::MAX_ENCODED_NAME_BYTES;
pub use store::OffsetStore;
