//! What a [`Storage`](super::Storage) is told at start: where the logs live, how big a segment
//! is, how records reach the disk, and how long they stay.
//!
//! Every knob has a named default and, where a bad value would break an invariant rather than
//! just perform badly, a named limit checked by [`StorageConfig::validate`].

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use booblik_protocol::RECORD_HEADER_BYTES;

use super::error::StorageError;
use super::io::{RealIo, StorageIo};

/// Default capacity of one segment file: 512 MiB.
pub const DEFAULT_SEGMENT_BYTES: u64 = 512 * 1024 * 1024;
/// Largest segment capacity. Positions inside a segment are kept as `u32` (the sparse index
/// stores them in 4 bytes) and a FETCH payload length is an `int32`, so a segment stays below
/// 2 GiB.
pub const MAX_SEGMENT_BYTES: u64 = i32::MAX as u64;
/// Smallest segment capacity: room for one record with a one-byte payload.
pub const MIN_SEGMENT_BYTES: u64 = RECORD_HEADER_BYTES as u64 + 1;
/// Default distance, in bytes, between two entries of the sparse offset index.
pub const DEFAULT_INDEX_INTERVAL_BYTES: u32 = 4096;
/// Default number of appends that may wait in one partition's writer queue before producers are
/// made to wait (backpressure).
pub const DEFAULT_WRITER_QUEUE_DEPTH: usize = 1024;
/// Largest writer queue depth accepted (the queue is a semaphore; this keeps it far below
/// tokio's permit limit). Memory for queued batches is bounded by
/// [`StorageConfig::writer_queue_bytes`], not by the depth.
pub const MAX_WRITER_QUEUE_DEPTH: usize = 1 << 20;
/// Default number of bytes (records as they will sit in a segment, headers included) that may
/// wait in the writer queues of **all** partitions together before producers are made to wait:
/// 256 MiB. The depth alone does not bound memory, since one batch may be as large as a frame
/// (8 MiB); a per-partition bound would multiply by up to 4 096 partitions.
pub const DEFAULT_WRITER_QUEUE_BYTES: u64 = 256 * 1024 * 1024;
/// Smallest writer queue byte budget accepted: 1 MiB. Nothing breaks below it (a batch larger
/// than the budget is queued alone), but every ordinary batch would then queue alone, and a
/// value this small is far more likely a unit mistake (MiB given as bytes) than a wish.
pub const MIN_WRITER_QUEUE_BYTES: u64 = 1024 * 1024;
/// Largest writer queue byte budget accepted: 4 GiB − 1. The queue counts bytes as permits of
/// a semaphore, and a batch reserves its bytes in one `acquire_many`, which takes a `u32`.
pub const MAX_WRITER_QUEUE_BYTES: u64 = u32::MAX as u64;
/// Default period of the retention check.
pub const DEFAULT_RETENTION_CHECK_INTERVAL_MS: u64 = 60_000;

/// How the writer puts record bytes into a segment file. Both modes produce the same bytes on
/// disk and share one read path (positional reads of the file descriptor).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// The active segment is pre-sized to its capacity and memory-mapped; records are copied into
    /// the mapping, body and CRC first and the length last, so a crash leaves a zero length.
    Mapped,
    /// Records are written with positional writes (`pwrite`); the file length bounds the log.
    File,
}

impl WriteMode {
    /// Lower-case name, as accepted by [`FromStr`].
    pub fn name(self) -> &'static str {
        match self {
            WriteMode::Mapped => "mapped",
            WriteMode::File => "file",
        }
    }
}

impl std::fmt::Display for WriteMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A string that names no [`WriteMode`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown write mode {0:?}: use \"mapped\" or \"file\"")]
pub struct UnknownWriteMode(pub String);

impl FromStr for WriteMode {
    type Err = UnknownWriteMode;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "mapped" => Ok(WriteMode::Mapped),
            "file" => Ok(WriteMode::File),
            _ => Err(UnknownWriteMode(s.to_owned())),
        }
    }
}

/// Storage settings shared by every partition.
#[derive(Debug, Clone)]
pub struct StorageConfig {
    /// Directory holding one `<topic>-<partition>/` directory of segments per partition.
    pub data_dir: PathBuf,
    /// Capacity of one segment file. A record with `size + 8 > segment_bytes` is refused.
    pub segment_bytes: u64,
    /// How records are written.
    pub write_mode: WriteMode,
    /// Drop the oldest sealed segments while a partition holds more than this many bytes.
    pub retention_bytes: Option<u64>,
    /// Drop sealed segments whose last write (file mtime) is older than this.
    pub retention_ms: Option<u64>,
    /// Bytes between two entries of the sparse offset index.
    pub index_interval_bytes: u32,
    /// Appends that may wait in one partition's writer queue before `append` waits for room.
    pub writer_queue_depth: usize,
    /// Bytes of records (as [`RecordSet::log_bytes`](booblik_protocol::RecordSet::log_bytes)
    /// counts them) that may wait in the writer queues of all partitions together before
    /// `append` waits for room; a partition with nothing queued may always admit one batch. A
    /// batch larger than the whole budget is queued alone, once the budget is free.
    pub writer_queue_bytes: u64,
    /// How often each writer checks retention.
    pub retention_check_interval_ms: u64,
    /// What every file change and fsync of the storage goes through: [`RealIo`] (the file
    /// system) unless a test passes a simulation.
    pub io: Arc<dyn StorageIo>,
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from("booblik-data"),
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            write_mode: WriteMode::Mapped,
            retention_bytes: None,
            retention_ms: None,
            index_interval_bytes: DEFAULT_INDEX_INTERVAL_BYTES,
            writer_queue_depth: DEFAULT_WRITER_QUEUE_DEPTH,
            writer_queue_bytes: DEFAULT_WRITER_QUEUE_BYTES,
            retention_check_interval_ms: DEFAULT_RETENTION_CHECK_INTERVAL_MS,
            io: Arc::new(RealIo),
        }
    }
}

impl StorageConfig {
    /// Largest payload a record may have: it must fit an empty segment with its header.
    pub fn max_payload_bytes(&self) -> usize {
        (self.segment_bytes as usize).saturating_sub(RECORD_HEADER_BYTES)
    }

    /// Checks the limits that protect invariants (not performance).
    pub fn validate(&self) -> Result<(), StorageError> {
        let invalid = |reason: String| Err(StorageError::InvalidConfig { reason });
        if !(MIN_SEGMENT_BYTES..=MAX_SEGMENT_BYTES).contains(&self.segment_bytes) {
            return invalid(format!(
                "segment_bytes = {} is outside {MIN_SEGMENT_BYTES}..={MAX_SEGMENT_BYTES}",
                self.segment_bytes
            ));
        }
        if self.index_interval_bytes == 0 {
            return invalid("index_interval_bytes must be at least 1".to_owned());
        }
        if !(1..=MAX_WRITER_QUEUE_DEPTH).contains(&self.writer_queue_depth) {
            return invalid(format!(
                "writer_queue_depth = {} is outside 1..={MAX_WRITER_QUEUE_DEPTH}",
                self.writer_queue_depth
            ));
        }
        if !(MIN_WRITER_QUEUE_BYTES..=MAX_WRITER_QUEUE_BYTES).contains(&self.writer_queue_bytes) {
            return invalid(format!(
                "writer_queue_bytes = {} is outside {MIN_WRITER_QUEUE_BYTES}..={MAX_WRITER_QUEUE_BYTES}",
                self.writer_queue_bytes
            ));
        }
        if self.retention_check_interval_ms == 0 {
            return invalid("retention_check_interval_ms must be at least 1".to_owned());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_modes_parse_from_their_names() {
        assert_eq!("mapped".parse::<WriteMode>(), Ok(WriteMode::Mapped));
        assert_eq!("FILE".parse::<WriteMode>(), Ok(WriteMode::File));
        assert!("mmap".parse::<WriteMode>().is_err());
    }

    #[test]
    fn the_default_config_is_valid_and_uses_512_mib_mapped_segments() {
        let config = StorageConfig::default();
        config.validate().unwrap();
        assert_eq!(config.segment_bytes, 512 * 1024 * 1024);
        assert_eq!(config.write_mode, WriteMode::Mapped);
        assert_eq!(config.index_interval_bytes, 4096);
        assert_eq!(config.retention_bytes, None);
        assert_eq!(config.retention_ms, None);
        assert_eq!(config.writer_queue_bytes, 256 * 1024 * 1024);
    }

    #[test]
    fn writer_queue_byte_budgets_outside_one_mebibyte_to_four_gibibytes_are_refused() {
        for writer_queue_bytes in [0, MIN_WRITER_QUEUE_BYTES - 1, MAX_WRITER_QUEUE_BYTES + 1] {
            let config = StorageConfig {
                writer_queue_bytes,
                ..StorageConfig::default()
            };
            assert!(
                matches!(config.validate(), Err(StorageError::InvalidConfig { .. })),
                "{writer_queue_bytes} was accepted"
            );
        }
        for writer_queue_bytes in [MIN_WRITER_QUEUE_BYTES, MAX_WRITER_QUEUE_BYTES] {
            let config = StorageConfig {
                writer_queue_bytes,
                ..StorageConfig::default()
            };
            config.validate().unwrap();
        }
    }

    #[test]
    fn segments_of_two_gibibytes_or_more_are_refused() {
        let config = StorageConfig {
            segment_bytes: 1 << 31,
            ..StorageConfig::default()
        };
        assert!(matches!(
            config.validate(),
            Err(StorageError::InvalidConfig { .. })
        ));
    }
}
