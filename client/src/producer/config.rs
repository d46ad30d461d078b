//! [`ProducerConfig`]: the batching and backpressure knobs of a [`Producer`](crate::Producer).
//!
//! Batching is the point of a producer, not an optimisation: the Kotlin implementation measured
//! a single-record write at 54× the per-record cost of a batched one. The linger window bounds
//! the latency that batching adds, and it is measured from the **first** record of a batch — from
//! the last, a steady trickle of records would postpone the send forever.

use booblik_protocol::{AckPolicy, MAX_FRAME_BYTES, MAX_TOPIC_NAME_CHARS, REQUEST_HEADER_BYTES};

use crate::error::ClientError;

/// Bytes of a PRODUCE frame around its records, for the longest topic name: header,
/// `u16 nameLen`, name, `int32 partition`, `int8 ackPolicy`, `int32 recordCount`.
const PRODUCE_OVERHEAD_BYTES: usize = REQUEST_HEADER_BYTES + 2 + MAX_TOPIC_NAME_CHARS + 4 + 1 + 4;

/// Largest `max_batch_bytes`, and the largest single record (`int32 size` + payload) a producer
/// can send: what fits in one frame next to the PRODUCE header.
pub const MAX_BATCH_BYTES: usize = MAX_FRAME_BYTES - PRODUCE_OVERHEAD_BYTES;

/// Default [`ProducerConfig::linger_ms`].
pub const DEFAULT_LINGER_MS: u64 = 5;
/// Default [`ProducerConfig::max_batch_bytes`].
pub const DEFAULT_MAX_BATCH_BYTES: usize = 1024 * 1024;
/// Default [`ProducerConfig::max_in_flight_batches`].
pub const DEFAULT_MAX_IN_FLIGHT_BATCHES: usize = 8;
/// Default [`ProducerConfig::buffer_bytes`].
pub const DEFAULT_BUFFER_BYTES: usize = 32 * 1024 * 1024;
/// Default [`ProducerConfig::command_queue_depth`].
pub const DEFAULT_COMMAND_QUEUE_DEPTH: usize = 1024;

/// How a [`Producer`](crate::Producer) batches and when it pushes back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerConfig {
    /// When the broker answers. With [`AckPolicy::None`] every delivery resolves to `Ok(None)`
    /// once its batch is written to the socket.
    pub ack: AckPolicy,
    /// How long a batch may wait for more records, counted from its first record.
    pub linger_ms: u64,
    /// A batch is sent as soon as its records (`int32 size` + payload each) reach this many
    /// bytes. A single larger record is sent alone. At most [`MAX_BATCH_BYTES`].
    pub max_batch_bytes: usize,
    /// Batches sent and not yet answered; more wait (and so do the records behind them).
    pub max_in_flight_batches: usize,
    /// Bytes of records accepted and not yet delivered. When full, `send` waits: this is the
    /// producer's backpressure. A record larger than the whole buffer takes all of it.
    pub buffer_bytes: usize,
    /// Flush requests queued for the producer's task. Records do not go through this queue:
    /// `send` appends them to the shared batches directly.
    pub command_queue_depth: usize,
}

impl Default for ProducerConfig {
    fn default() -> Self {
        Self {
            ack: AckPolicy::Written,
            linger_ms: DEFAULT_LINGER_MS,
            max_batch_bytes: DEFAULT_MAX_BATCH_BYTES,
            max_in_flight_batches: DEFAULT_MAX_IN_FLIGHT_BATCHES,
            buffer_bytes: DEFAULT_BUFFER_BYTES,
            command_queue_depth: DEFAULT_COMMAND_QUEUE_DEPTH,
        }
    }
}

impl ProducerConfig {
    /// Checks that every limit can be honoured.
    pub fn validate(&self) -> Result<(), ClientError> {
        let invalid = |message: String| Err(ClientError::InvalidConfig(message));
        if self.max_batch_bytes == 0 || self.max_batch_bytes > MAX_BATCH_BYTES {
            return invalid(format!(
                "ProducerConfig::max_batch_bytes must be in 1..={MAX_BATCH_BYTES}"
            ));
        }
        if self.max_in_flight_batches == 0 || self.max_in_flight_batches > u32::MAX as usize {
            return invalid("ProducerConfig::max_in_flight_batches must be in 1..=u32::MAX".into());
        }
        if self.buffer_bytes == 0 || self.buffer_bytes > u32::MAX as usize {
            return invalid("ProducerConfig::buffer_bytes must be in 1..=u32::MAX".into());
        }
        if self.command_queue_depth == 0 {
            return invalid("ProducerConfig::command_queue_depth must be at least 1".into());
        }
        Ok(())
    }
}
