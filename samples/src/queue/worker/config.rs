//! [`WorkerConfig`]: everything a worker can be told, with defaults that are safe to run.
//!
//! Two groups of settings live here and they are not alike:
//!
//! * **Per worker** — `worker_id`, `work_ms`, `pick`, `extend_every_ms`, `follow_max_wait_ms`:
//!   each worker may choose its own.
//! * **Per queue** — `queue` (the verdict parameters) and the topic names: every reader of the
//!   claims log must use the same values, or their verdicts diverge. `lease_ms` is in between:
//!   it is written into every claim and extend, so readers agree on it whatever each worker
//!   chooses, but it must respect the queue's retention (see `docs/task-queue.md`).

use std::time::{Duration, Instant};

use booblik_protocol::{AckPolicy, TopicName};
use serde::Serialize;
use uuid::Uuid;

use crate::queue::pick::Pick;
use crate::queue::record::ProtocolLevel;
use crate::queue::state::QueueConfig;

/// Default [`WorkerConfig::lease_ms`].
pub const DEFAULT_LEASE_MS: u64 = 5_000;
/// Default [`WorkerConfig::work_ms`].
pub const DEFAULT_WORK_MS: u64 = 1_000;
/// Default [`WorkerConfig::follow_max_wait_ms`]: the client's default long poll.
pub const DEFAULT_FOLLOW_MAX_WAIT_MS: u64 = 500;
/// Longest long poll the broker honours; a longer `follow_max_wait_ms` is refused.
pub const MAX_FOLLOW_MAX_WAIT_MS: u64 = 60_000;
/// The extend interval is the lease divided by this when [`WorkerConfig::extend_every_ms`] is 0:
/// an extend at a third of the lease leaves two more intervals for one to land before expiry.
pub const EXTENDS_PER_LEASE: u64 = 3;

/// An explicit `extend_every_ms` may be at most the lease divided by this (see
/// [`WorkerConfigError::ExtendNotBeforeExpiry`]).
pub const MIN_EXTENDS_PER_LEASE: u64 = 2;

/// The longest lease a worker takes whatever the queue allows: one day (deadline arithmetic
/// stays far from overflow). The queue's own maximum, [`QueueConfig::max_lease_ms`], is the
/// bound every reader enforces in the verdict; a worker asks for at most the smaller of the two.
pub const MAX_LEASE_MS: u64 = crate::queue::state::DEFAULT_MAX_LEASE_MS;

/// How a worker runs. Build it with struct update syntax from [`Default`]:
///
/// ```
/// use booblik_samples::queue::worker::WorkerConfig;
/// let config = WorkerConfig { lease_ms: 600, work_ms: 100, ..WorkerConfig::default() };
/// assert_eq!(config.extend_every().as_millis(), 200); // 0 means "a third of the lease"
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkerConfig {
    /// Identity written into every claim, extend and done. A fresh v4 UUID by default; give a
    /// stable one only if a restarted worker should be recognisable in the logs.
    ///
    /// **Never run two processes with one worker id.** The protocol tells workers apart by it
    /// alone: a worker treats a lease held under its id as possibly its own (a claim whose
    /// acknowledgement was lost), so two processes sharing an id could both work under one
    /// token. A worker adopts such a lease only if the claim was written after it started, on a
    /// task whose claim append it saw fail, and refuses others with an error in the log — which
    /// narrows the window, but cannot close it.
    pub worker_id: Uuid,
    /// Topic of `Task` records (one partition).
    pub tasks_topic: String,
    /// Topic of claims, extends and dones (exactly one partition: one total order).
    pub claims_topic: String,
    /// Lease asked for by every claim and renewed by every extend.
    pub lease_ms: u64,
    /// How long the simulated work takes (ignored by a custom work function).
    pub work_ms: u64,
    /// Interval between extends while working, from the last grant or renewal. `0` means
    /// `lease_ms / 3` ([`EXTENDS_PER_LEASE`]); otherwise it must be at most `lease_ms / 2`
    /// ([`MIN_EXTENDS_PER_LEASE`]), so that an extend and its verdict have half the lease to land
    /// before the worker's local lease deadline (`validate` refuses more with
    /// [`WorkerConfigError::ExtendNotBeforeExpiry`]).
    pub extend_every_ms: u64,
    /// How to choose among claimable tasks.
    pub pick: Pick,
    /// Verdict parameters; must be the same for every worker and the verifier.
    pub queue: QueueConfig,
    /// Ack policy of every append to the claims topic (claims, extends, dones). `Forced` by
    /// default: a verdict must be derived from a durable prefix of the log. `None` is refused:
    /// the worker needs the offset the append returns.
    #[serde(serialize_with = "serialize_ack")]
    pub claim_ack: AckPolicy,
    /// Long-poll wait of the two followers' reads (booblik's FETCH v2, JetStream's pull with an
    /// expiry; at most the engine's `MAX_READ_WAIT`, 30 s, whatever is set here): an idle worker
    /// sends about one read per follower per this interval.
    pub follow_max_wait_ms: u64,
    /// The largest difference between two writers' clocks this worker allows for; its local
    /// lease deadline is `issued_at + lease_ms − this`, so that it stops working before another
    /// worker's claim can win. `None`: a tenth of the lease
    /// ([`DEFAULT_CLOCK_SKEW_PERCENT`](super::DEFAULT_CLOCK_SKEW_PERCENT)). Must be below the
    /// lease, and leave time for the first extend. Nothing checks the real skew: the promise
    /// holds only while the clocks keep to it (`docs/task-queue.md`, *Clocks*).
    pub max_clock_skew_ms: Option<u64>,
    /// Which record kinds this worker writes. [`ProtocolLevel::V1`] (the default) writes
    /// claims, extends and dones only; [`ProtocolLevel::V2`] also writes a release when it stops
    /// cleanly holding a task. Raise it only once every reader of the claims log runs code that
    /// knows the newer kinds (`docs/task-queue.md`, *Rolling out a new record kind*).
    #[serde(serialize_with = "serialize_level")]
    pub protocol: ProtocolLevel,
    /// Append a finished task's done in one batch with the worker's next claim (`true`, the
    /// default), rather than on its own first. A worker that finishes a task and has another to
    /// claim then pays one append — one round trip, one fsync — for both: the done is in the
    /// log before the claim, as it would be appended alone, and its verdict is known before
    /// the claim's (the follower applies them in order). With nothing to claim the done goes
    /// alone at once. `false` is kept for comparison (`booblik-load queue --separate-dones`).
    pub done_with_next_claim: bool,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            worker_id: Uuid::new_v4(),
            tasks_topic: "tasks".to_owned(),
            claims_topic: "claims".to_owned(),
            lease_ms: DEFAULT_LEASE_MS,
            work_ms: DEFAULT_WORK_MS,
            extend_every_ms: 0,
            pick: Pick::Random,
            queue: QueueConfig::default(),
            claim_ack: AckPolicy::Forced,
            follow_max_wait_ms: DEFAULT_FOLLOW_MAX_WAIT_MS,
            max_clock_skew_ms: None,
            protocol: ProtocolLevel::default(),
            done_with_next_claim: true,
        }
    }
}

/// A [`WorkerConfig`] that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkerConfigError {
    /// A lease of zero would expire as it is granted.
    #[error("lease_ms must be at least 1")]
    ZeroLease,
    /// A lease longer than the queue's [`QueueConfig::max_lease_ms`] (or [`MAX_LEASE_MS`]): every
    /// reader would judge its claims void.
    #[error("lease_ms ({lease_ms}) must be at most {max_lease_ms} (the queue's max_lease_ms)")]
    LeaseTooLong {
        /// The lease.
        lease_ms: u64,
        /// The most this worker may ask for.
        max_lease_ms: u64,
    },
    /// An extend must be due by half the lease ([`MIN_EXTENDS_PER_LEASE`]): its verdict then
    /// has the rest of the lease, up to the worker's local deadline (the lease less the clock
    /// skew), to arrive. An extend
    /// due just before that deadline would make the worker give up leases whose renewal was
    /// merely a round trip late.
    #[error(
        "extend_every_ms ({extend_every_ms}) must be at most lease_ms ({lease_ms}) / {MIN_EXTENDS_PER_LEASE}, so that its verdict can arrive before the local lease deadline"
    )]
    ExtendNotBeforeExpiry {
        /// The configured interval.
        extend_every_ms: u64,
        /// The lease.
        lease_ms: u64,
    },
    /// A lease too short to divide into extend intervals.
    #[error("lease_ms ({lease_ms}) is too short to extend every lease_ms / {EXTENDS_PER_LEASE}")]
    LeaseTooShortToExtend {
        /// The lease.
        lease_ms: u64,
    },
    /// A clock skew as long as the lease leaves no moment at which the worker may work.
    #[error("max_clock_skew_ms ({max_clock_skew_ms}) must be below lease_ms ({lease_ms})")]
    ClockSkewNotBelowLease {
        /// The configured skew.
        max_clock_skew_ms: u64,
        /// The lease.
        lease_ms: u64,
    },
    /// The first extend would be due after the local lease deadline (`lease_ms −
    /// max_clock_skew_ms`): every lease would be given up before it could be renewed.
    #[error(
        "extend_every_ms ({extend_every_ms}) must be below the local lease deadline, lease_ms - max_clock_skew_ms ({local_deadline_ms})"
    )]
    ExtendAfterLocalDeadline {
        /// The extend interval in force.
        extend_every_ms: u64,
        /// `lease_ms − max_clock_skew_ms`.
        local_deadline_ms: u64,
    },
    /// The long poll must wait, or following turns into busy polling.
    #[error("follow_max_wait_ms must be in 1..={MAX_FOLLOW_MAX_WAIT_MS}, got {0}")]
    FollowMaxWait(u64),
    /// Under `ack = NONE` the broker does not return the offset, and the offset is how a worker
    /// recognises its own claim.
    #[error("claim_ack NONE returns no offset; use FORCED (recommended) or WRITTEN")]
    NoAck,
    /// A topic name the broker would refuse.
    #[error("invalid topic name {name:?}: {reason}")]
    TopicName {
        /// The name given.
        name: String,
        /// Why it is invalid.
        reason: String,
    },
    /// Rendezvous ranks tasks over the live workers, and idle workers are live only by their
    /// heartbeats, which protocol level 1 does not write.
    #[error("pick = rendezvous needs protocol level 2 (heartbeats make idle workers live)")]
    RendezvousWithoutHeartbeats,
    /// Both roles on one topic would mix task records into the claims order.
    #[error("tasks_topic and claims_topic must differ (both are {0:?})")]
    SameTopic(String),
}

impl WorkerConfig {
    /// The interval between extends: `extend_every_ms`, or `lease_ms / 3` when that is 0.
    pub fn extend_every(&self) -> Duration {
        let ms = if self.extend_every_ms == 0 {
            self.lease_ms / EXTENDS_PER_LEASE
        } else {
            self.extend_every_ms
        };
        Duration::from_millis(ms)
    }

    /// The clock skew in force: `max_clock_skew_ms`, or a tenth of the lease when unset.
    pub fn clock_skew_ms(&self) -> u64 {
        self.max_clock_skew_ms
            .unwrap_or(self.lease_ms * super::DEFAULT_CLOCK_SKEW_PERCENT / 100)
    }

    /// The local lease deadline of a lease confirmed as issued at `issued_at`:
    /// [`local_lease_deadline`](super::local_lease_deadline) with this lease and skew.
    pub fn local_lease_deadline(&self, issued_at: Instant) -> Instant {
        super::local_lease_deadline(issued_at, self.lease_ms, self.clock_skew_ms())
    }

    /// The lease as a duration.
    pub fn lease(&self) -> Duration {
        Duration::from_millis(self.lease_ms)
    }

    /// Checks that a worker with this configuration can hold a lease and learn its verdicts.
    pub fn validate(&self) -> Result<(), WorkerConfigError> {
        if self.lease_ms == 0 {
            return Err(WorkerConfigError::ZeroLease);
        }
        let max_lease_ms = self.queue.max_lease_ms.min(MAX_LEASE_MS);
        if self.lease_ms > max_lease_ms {
            return Err(WorkerConfigError::LeaseTooLong {
                lease_ms: self.lease_ms,
                max_lease_ms,
            });
        }
        if self.extend_every_ms == 0 && self.lease_ms < EXTENDS_PER_LEASE {
            return Err(WorkerConfigError::LeaseTooShortToExtend {
                lease_ms: self.lease_ms,
            });
        }
        if self.extend_every_ms > self.lease_ms / MIN_EXTENDS_PER_LEASE {
            return Err(WorkerConfigError::ExtendNotBeforeExpiry {
                extend_every_ms: self.extend_every_ms,
                lease_ms: self.lease_ms,
            });
        }
        let skew_ms = self.clock_skew_ms();
        if skew_ms >= self.lease_ms {
            return Err(WorkerConfigError::ClockSkewNotBelowLease {
                max_clock_skew_ms: skew_ms,
                lease_ms: self.lease_ms,
            });
        }
        let extend_every_ms = self.extend_every().as_millis() as u64;
        if extend_every_ms >= self.lease_ms - skew_ms {
            return Err(WorkerConfigError::ExtendAfterLocalDeadline {
                extend_every_ms,
                local_deadline_ms: self.lease_ms - skew_ms,
            });
        }
        if !(1..=MAX_FOLLOW_MAX_WAIT_MS).contains(&self.follow_max_wait_ms) {
            return Err(WorkerConfigError::FollowMaxWait(self.follow_max_wait_ms));
        }
        if self.claim_ack == AckPolicy::None {
            return Err(WorkerConfigError::NoAck);
        }
        for name in [&self.tasks_topic, &self.claims_topic] {
            TopicName::new(name.as_str()).map_err(|error| WorkerConfigError::TopicName {
                name: name.clone(),
                reason: error.to_string(),
            })?;
        }
        if self.pick == Pick::Rendezvous && !self.protocol.writes_heartbeats() {
            return Err(WorkerConfigError::RendezvousWithoutHeartbeats);
        }
        if self.tasks_topic == self.claims_topic {
            return Err(WorkerConfigError::SameTopic(self.tasks_topic.clone()));
        }
        Ok(())
    }
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `serialize_with` passes a reference
fn serialize_level<S: serde::Serializer>(
    level: &ProtocolLevel,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_u8(match level {
        ProtocolLevel::V1 => 1,
        ProtocolLevel::V2 => 2,
    })
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `serialize_with` passes a reference
fn serialize_ack<S: serde::Serializer>(ack: &AckPolicy, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(ack.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_configuration_is_valid_and_claims_with_forced_acks() {
        let config = WorkerConfig::default();
        assert_eq!(config.validate(), Ok(()));
        assert_eq!(config.claim_ack, AckPolicy::Forced);
        assert_eq!(config.pick, Pick::Random);
        assert_eq!(config.extend_every(), Duration::from_millis(5_000 / 3));
    }

    #[test]
    fn rendezvous_needs_the_heartbeats_of_protocol_level_2() {
        let level_1 = WorkerConfig {
            pick: Pick::Rendezvous,
            ..WorkerConfig::default()
        };
        assert_eq!(
            level_1.validate(),
            Err(WorkerConfigError::RendezvousWithoutHeartbeats)
        );
        let level_2 = WorkerConfig {
            protocol: ProtocolLevel::V2,
            ..level_1
        };
        assert_eq!(level_2.validate(), Ok(()));
    }

    #[test]
    fn the_default_extend_interval_follows_the_lease() {
        let config = WorkerConfig {
            lease_ms: 900,
            ..WorkerConfig::default()
        };
        assert_eq!(config.extend_every(), Duration::from_millis(300));
        let explicit = WorkerConfig {
            extend_every_ms: 100,
            ..config
        };
        assert_eq!(explicit.extend_every(), Duration::from_millis(100));
    }

    #[test]
    fn configurations_that_cannot_hold_a_lease_are_refused() {
        let base = WorkerConfig::default();
        let cases = [
            (
                WorkerConfig {
                    lease_ms: 0,
                    ..base.clone()
                },
                WorkerConfigError::ZeroLease,
            ),
            (
                WorkerConfig {
                    lease_ms: 2,
                    ..base.clone()
                },
                WorkerConfigError::LeaseTooShortToExtend { lease_ms: 2 },
            ),
            (
                WorkerConfig {
                    lease_ms: 600,
                    extend_every_ms: 600,
                    ..base.clone()
                },
                WorkerConfigError::ExtendNotBeforeExpiry {
                    extend_every_ms: 600,
                    lease_ms: 600,
                },
            ),
            // Below the local deadline (600 less 10 %), but its verdict would have 40 ms to
            // arrive: more than half the lease is refused.
            (
                WorkerConfig {
                    lease_ms: 600,
                    extend_every_ms: 301,
                    ..base.clone()
                },
                WorkerConfigError::ExtendNotBeforeExpiry {
                    extend_every_ms: 301,
                    lease_ms: 600,
                },
            ),
            (
                WorkerConfig {
                    lease_ms: MAX_LEASE_MS + 1,
                    ..base.clone()
                },
                WorkerConfigError::LeaseTooLong {
                    lease_ms: MAX_LEASE_MS + 1,
                    max_lease_ms: MAX_LEASE_MS,
                },
            ),
            (
                WorkerConfig {
                    follow_max_wait_ms: 0,
                    ..base.clone()
                },
                WorkerConfigError::FollowMaxWait(0),
            ),
            (
                WorkerConfig {
                    claim_ack: AckPolicy::None,
                    ..base.clone()
                },
                WorkerConfigError::NoAck,
            ),
            (
                WorkerConfig {
                    claims_topic: "tasks".to_owned(),
                    ..base.clone()
                },
                WorkerConfigError::SameTopic("tasks".to_owned()),
            ),
        ];
        for (config, expected) in cases {
            assert_eq!(config.validate(), Err(expected));
        }
        let bad_name = WorkerConfig {
            tasks_topic: "no/slashes".to_owned(),
            ..base
        };
        assert!(matches!(
            bad_name.validate(),
            Err(WorkerConfigError::TopicName { .. })
        ));
    }
}
