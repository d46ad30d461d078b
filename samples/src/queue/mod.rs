//! A task queue built as a claims-and-leases protocol over two log partitions — no coordinator,
//! no broker feature; the order of the log is the arbiter.
//!
//! A pure core shared by the workers, the verifier and the load harness, and the worker itself:
//!
//! * [`record`] — the records of the `tasks` and `claims` partitions and their versioned encoding;
//! * [`state`] — the verdict: a deterministic state machine over the two logs;
//! * [`verify`] — a pure check of both logs against the queue's invariants, with a summary;
//! * [`pick`] — how a worker chooses among the claimable tasks (first, random, rendezvous);
//! * [`worker`] — the worker that runs the protocol against a broker, plus submitting tasks and
//!   reading both logs (this part does I/O).
//!
//! Nothing but [`worker`] does I/O or reads a clock; callers of the core pass offsets, records
//! and clock readings in.
//! The protocol, its guarantees and its limits are described in `docs/task-queue.md`.

pub mod pick;
pub mod record;
pub mod state;
pub mod verify;
pub mod worker;
