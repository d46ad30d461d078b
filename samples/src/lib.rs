//! Reference applications on booblik: read them, copy them.
//!
//! | module | layer | what it shows |
//! |---|---|---|
//! | [`events`] | 1 | keyed events; a follow consumer with durable positions (at-least-once); replay; a projection |
//! | [`queue`] | 2 | a task queue as claims and leases over a log partition (`docs/task-queue.md`) |
//! | [`relay`] | — | mirroring a topic between booblik and JetStream (and, with the feature `kafka`, Kafka): where the position lives (`docs/relay.md`) |
//! | [`support`] | — | plumbing shared by the binaries: flags, shutdown, retries, stats over HTTP, an embedded broker |
//!
//! Binaries (`src/bin/`): `publisher`, `follow-consumer`, `replay-consumer`, `projection`,
//! `demo`, `queue-submit`, `queue-worker`, `queue-verify`, `relay`. Examples (`examples/`, each under 150
//! lines, each runs on its own embedded broker): `keyed_publisher`, `follow_and_save`,
//! `replay_to_end`, `projection_snapshot`, `queue_worker` — the patterns to copy, without the
//! production plumbing. `samples/README.md` has the reading path and maps every pattern to the
//! file that shows it.

pub mod engine;
pub mod events;
pub mod queue;
pub mod relay;
pub mod support;
