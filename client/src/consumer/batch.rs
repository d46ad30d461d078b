//! [`Batch`] and [`Record`]: what a FETCH answer becomes once it has been checked.
//!
//! A FETCH payload is raw segment bytes cut at `maxBytes` without regard for record
//! boundaries: the broker never parses it (that is what makes zero-copy possible). So the
//! client does the parsing, and it is the only party that can:
//!
//! * it keeps only **whole records**; a partial tail is dropped and `next_offset` stops before
//!   it, so the next FETCH asks for that record from its start;
//! * it **verifies every CRC-32C** — on the zero-copy path nobody else ever looks at the bytes —
//!   and fails the whole answer with [`ClientError::CrcMismatch`] naming the offset;
//! * a partial tail with **no whole record before it** means the record is larger than
//!   `maxBytes`; dropping it and asking again would repeat forever, so it is
//!   [`ClientError::RecordExceedsMaxBytes`];
//! * an empty payload is normal: the consumer has caught up.
//!
//! Records share the fetched buffer: each payload is a `Bytes` slice of it, not a copy.

use booblik_protocol::{
    FetchResponse, RECORD_HEADER_BYTES, RecordScanner, ScanEnd, TopicName, crc32c, record_bytes,
};
use bytes::Bytes;

use crate::connection::MAX_FETCH_BYTES;
use crate::error::ClientError;

/// One record: its offset and its payload (a slice of the fetched buffer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The record's offset in its partition.
    pub offset: i64,
    /// The record's bytes.
    pub payload: Bytes,
}

/// Whole, verified records of one partition, in offset order, and where to read next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// The topic.
    pub topic: TopicName,
    /// The partition.
    pub partition: i32,
    /// Consecutive records starting at the fetch offset (possibly none).
    pub records: Vec<Record>,
    /// The offset after the last record: where the next fetch starts, and what a checkpoint
    /// saves.
    pub next_offset: i64,
    /// The partition's high watermark when the broker answered.
    pub high_watermark: i64,
}

impl Batch {
    /// Checks a FETCH answer for `topic`/`partition` at `fetch_offset` that was asked with
    /// `max_bytes` and keeps its whole records (see the module docs for every rule).
    pub fn from_fetch(
        topic: &TopicName,
        partition: i32,
        fetch_offset: i64,
        max_bytes: i32,
        response: FetchResponse,
    ) -> Result<Batch, ClientError> {
        let max_bytes = max_bytes.min(MAX_FETCH_BYTES);
        let payload = response.payload;
        let mut scanner = RecordScanner::new(&payload);
        let mut records = Vec::new();
        let mut offset = fetch_offset;
        for record in scanner.by_ref() {
            // The largest offset a record can have is i64::MAX − 1 (the high watermark after it
            // is i64::MAX): records past it come only from a broken or hostile broker, and
            // must not panic or wrap the position.
            let Some(next_offset) = offset.checked_add(1) else {
                return Err(ClientError::CorruptPayload {
                    topic: topic.clone(),
                    partition,
                    offset,
                    detail: "a record at offset i64::MAX, past the largest offset a record can \
                             have"
                        .into(),
                });
            };
            if !record.crc_matches() {
                return Err(ClientError::CrcMismatch {
                    topic: topic.clone(),
                    partition,
                    offset,
                    stored: record.stored_crc,
                    computed: crc32c(record.payload),
                });
            }
            let start = record.position + RECORD_HEADER_BYTES;
            records.push(Record {
                offset,
                payload: payload.slice(start..start + record.payload.len()),
            });
            offset = next_offset;
        }
        let corrupt = |detail: String| ClientError::CorruptPayload {
            topic: topic.clone(),
            partition,
            offset,
            detail,
        };
        match scanner.end().unwrap_or(ScanEnd::Clean) {
            ScanEnd::Clean => {}
            ScanEnd::ZeroLength { .. } => {
                // Unwritten space: nothing past the records before it. With no record before
                // it, the next fetch would get the same zeros forever.
                if records.is_empty() {
                    return Err(corrupt(
                        "a zero length (unwritten space) where a record should start".into(),
                    ));
                }
            }
            ScanEnd::NegativeLength { length, .. } => {
                return Err(corrupt(format!(
                    "a negative length {length} where a record should start"
                )));
            }
            ScanEnd::Partial {
                declared_len,
                available,
                ..
            } => {
                if records.is_empty() {
                    return Err(match declared_len {
                        Some(size) if record_bytes(size) > max_bytes as usize => {
                            ClientError::RecordExceedsMaxBytes {
                                size,
                                max_bytes,
                                offset,
                            }
                        }
                        Some(size) => corrupt(format!(
                            "the answer stops after {available} of the record's {} bytes, \
                             although maxBytes {max_bytes} would hold it",
                            record_bytes(size)
                        )),
                        None => corrupt(format!(
                            "the answer holds {available} bytes, less than a record's length \
                             field; maxBytes {max_bytes} is too small to read any record"
                        )),
                    });
                }
            }
        }
        Ok(Batch {
            topic: topic.clone(),
            partition,
            records,
            next_offset: offset,
            high_watermark: response.high_watermark,
        })
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// True when the batch holds no record (a caught-up consumer).
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Offset of the first record, if any.
    pub fn first_offset(&self) -> Option<i64> {
        self.records.first().map(|r| r.offset)
    }

    /// Drops the records at `end_offset` and beyond (a replay stops at the high watermark it
    /// saw when it started).
    pub(crate) fn truncate_at(&mut self, end_offset: i64) {
        let first = self.next_offset - self.records.len() as i64;
        // `end_offset` is a broker's high watermark: saturate rather than trust it.
        let keep = usize::try_from(end_offset.saturating_sub(first))
            .unwrap_or(0)
            .min(self.records.len());
        self.records.truncate(keep);
        self.next_offset = first + keep as i64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use booblik_protocol::encode_record;

    fn topic() -> TopicName {
        TopicName::new("t").unwrap()
    }

    fn payload(records: &[&[u8]]) -> Vec<u8> {
        let mut buf = Vec::new();
        for r in records {
            encode_record(r, &mut buf);
        }
        buf
    }

    fn fetch(bytes: Vec<u8>) -> FetchResponse {
        FetchResponse {
            high_watermark: 100,
            payload: Bytes::from(bytes),
        }
    }

    #[test]
    fn whole_records_get_consecutive_offsets_and_share_the_buffer() {
        let response = fetch(payload(&[b"a", b"bc"]));
        let base = response.payload.as_ptr() as usize;
        let batch = Batch::from_fetch(&topic(), 0, 10, 1024, response).unwrap();
        assert_eq!(batch.len(), 2);
        assert_eq!(batch.records[0].offset, 10);
        assert_eq!(&batch.records[1].payload[..], b"bc");
        assert_eq!(batch.records[1].payload.as_ptr() as usize, base + 9 + 8);
        assert_eq!(batch.next_offset, 12);
        assert_eq!(batch.high_watermark, 100);
    }

    #[test]
    fn a_partial_tail_is_dropped_and_next_offset_stops_before_it() {
        let mut bytes = payload(&[b"hello", b"world"]);
        bytes.truncate(bytes.len() - 2);
        let batch = Batch::from_fetch(&topic(), 0, 0, 1024, fetch(bytes)).unwrap();
        assert_eq!(batch.len(), 1);
        assert_eq!(batch.next_offset, 1);
    }

    #[test]
    fn a_partial_tail_alone_is_a_record_exceeding_max_bytes() {
        let mut bytes = payload(&[&[b'X'; 500]]);
        bytes.truncate(100);
        let err = Batch::from_fetch(&topic(), 0, 3, 100, fetch(bytes)).unwrap_err();
        assert!(matches!(
            err,
            ClientError::RecordExceedsMaxBytes {
                size: 500,
                max_bytes: 100,
                offset: 3
            }
        ));
    }

    #[test]
    fn a_bad_crc_fails_the_answer_naming_its_offset() {
        let mut bytes = payload(&[b"ok", b"bad"]);
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        let err = Batch::from_fetch(&topic(), 4, 20, 1024, fetch(bytes)).unwrap_err();
        assert!(matches!(
            err,
            ClientError::CrcMismatch {
                partition: 4,
                offset: 21,
                ..
            }
        ));
    }

    #[test]
    fn an_empty_payload_is_a_caught_up_empty_batch() {
        let batch = Batch::from_fetch(&topic(), 0, 7, 1024, fetch(Vec::new())).unwrap();
        assert!(batch.is_empty());
        assert_eq!(batch.next_offset, 7);
    }

    #[test]
    fn zeros_where_a_record_should_start_are_corrupt() {
        let err = Batch::from_fetch(&topic(), 0, 7, 1024, fetch(vec![0; 16])).unwrap_err();
        assert!(matches!(err, ClientError::CorruptPayload { offset: 7, .. }));
    }

    #[test]
    fn records_past_the_largest_offset_are_corrupt_not_a_panic() {
        // Fetched at i64::MAX − 1: the first record is the last one an offset allows.
        let err = Batch::from_fetch(
            &topic(),
            2,
            i64::MAX - 1,
            1024,
            fetch(payload(&[b"last", b"past the end"])),
        )
        .unwrap_err();
        assert!(
            matches!(
                err,
                ClientError::CorruptPayload {
                    partition: 2,
                    offset: i64::MAX,
                    ..
                }
            ),
            "{err:?}"
        );
        let last =
            Batch::from_fetch(&topic(), 0, i64::MAX - 1, 1024, fetch(payload(&[b"last"]))).unwrap();
        assert_eq!(last.next_offset, i64::MAX);
    }

    #[test]
    fn truncating_at_a_hostile_end_offset_keeps_nothing_instead_of_overflowing() {
        let mut batch =
            Batch::from_fetch(&topic(), 0, 5, 1024, fetch(payload(&[b"a", b"b"]))).unwrap();
        batch.truncate_at(i64::MIN);
        assert!(batch.is_empty());
        assert_eq!(batch.next_offset, 5);
    }

    #[test]
    fn truncating_keeps_records_below_the_end() {
        let mut batch =
            Batch::from_fetch(&topic(), 0, 5, 1024, fetch(payload(&[b"a", b"b", b"c"]))).unwrap();
        batch.truncate_at(7);
        assert_eq!(batch.len(), 2);
        assert_eq!(batch.next_offset, 7);
        batch.truncate_at(3);
        assert!(batch.is_empty());
        assert_eq!(batch.next_offset, 5);
    }
}
