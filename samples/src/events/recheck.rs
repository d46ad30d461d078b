//! After a reconnect, is the log still the log we read? A follower re-reads the last record it
//! applied and compares its checksum.
//!
//! # Why
//!
//! The broker serves records up to its high watermark, which includes records written but not yet
//! fsynced. If the broker's *machine* crashes, those records can vanish, and the offsets they had
//! are handed to the next records appended. A follower that had read (and checkpointed past)
//! them asks for the offset after them and gets it — holding different records, with nothing
//! in the answer to say so: the offsets look contiguous. Without a check it would silently skip
//! every new record below its position.
//!
//! A broker crash always breaks the follower's connection. The engine reopens its connection by
//! itself (a read is safe to repeat) and counts the times it did
//! ([`PartitionLog::reconnects`]), so the follower runs this check whenever that count grew,
//! before handling the batch that came over the new connection: it reads the record at the offset
//! it applied last and compares a CRC-32C of the payload with the one it kept. The same check
//! runs on JetStream after the client reconnected (to the same node or another): an R3 stream is
//! not expected to lose acknowledged records, and this is what would notice if it did. Same bytes: carry on. Different
//! bytes, or no record there any more: the log was rewritten under the follower's position, and
//! only a person (or a rebuild from the start) can say what the follower should believe now — so
//! it stops, loudly.
//!
//! [`recheck_log`] runs over the engine interface: the follow consumer and the task queue's two
//! followers use it, on either engine.
//!
//! What it does not catch: a rewrite while the follower itself was not running (a checkpoint
//! saves the offset, not the checksum), and a rewritten record with the same payload.

use std::time::Duration;

use booblik_protocol::crc32c;

use crate::engine::{EngineError, LogRecord, PartitionLog, ReadLimits};

/// The last record a follower applied: where it was, and a checksum of its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Applied {
    /// Its offset.
    pub offset: i64,
    /// CRC-32C of its payload.
    pub crc: u32,
}

impl Applied {
    /// What to remember of `record` (read with an engine).
    pub fn of_log_record(record: &LogRecord) -> Self {
        Self {
            offset: record.offset,
            crc: crc32c(&record.payload),
        }
    }
}

/// What the log holds now at the offset of the last applied record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recheck {
    /// The same record: the log behind the follower's position is the one it read.
    Same,
    /// Retention has dropped that record since: nothing left to compare, and nothing suspicious.
    Retained,
    /// A different record, or none (`found` is `None`: the log now ends before it).
    Rewritten {
        /// The offset checked.
        offset: i64,
        /// The checksum the follower applied.
        expected_crc: u32,
        /// The checksum found there now.
        found_crc: Option<u32>,
    },
}

/// Reads the record at `applied.offset` of `log` again and compares it.
pub async fn recheck_log(log: &dyn PartitionLog, applied: Applied) -> Result<Recheck, EngineError> {
    let rewritten = |found_crc| Recheck::Rewritten {
        offset: applied.offset,
        expected_crc: applied.crc,
        found_crc,
    };
    let one = ReadLimits {
        max_records: 1,
        wait: Duration::ZERO,
        ..ReadLimits::default()
    };
    match log.read(applied.offset, one).await {
        Ok(batch) => Ok(match batch.records.first() {
            Some(record) if record.offset == applied.offset => {
                if Applied::of_log_record(record) == applied {
                    Recheck::Same
                } else {
                    rewritten(Some(Applied::of_log_record(record).crc))
                }
            }
            // An empty answer at this offset: the log ends here now, before the record.
            _ => rewritten(None),
        }),
        // Either retention moved the log's start past the record (fine), or the log now ends
        // before it (rewritten): the start tells which.
        Err(EngineError::OutOfRange { start, .. }) if start > applied.offset => {
            Ok(Recheck::Retained)
        }
        Err(EngineError::OutOfRange { .. }) => Ok(rewritten(None)),
        Err(error) => Err(error),
    }
}
