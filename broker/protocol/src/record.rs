//! Records: the unit the log stores, on disk and in FETCH payloads.
//!
//! ```text
//! +--------------+-----------------------+-----------------+
//! | int32 length | int32 crc32c(payload) | payload         |
//! +--------------+-----------------------+-----------------+
//!   4 bytes        4 bytes                 `length` bytes, length ≥ 1
//! ```
//!
//! A FETCH payload is raw segment bytes, so it is a sequence of these records that may end in the
//! middle of one (the broker cuts at `maxBytes` without parsing). [`RecordScanner`] yields the
//! whole records and reports how the bytes ended ([`ScanEnd`]). A zero length never starts a
//! record: empty records do not exist, so zero marks unwritten space in a pre-sized segment.
//!
//! PRODUCE carries records differently — `{int32 size, bytes}` without a checksum, because the
//! broker computes the CRC when it writes. [`RecordSet`] holds that form.

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::WireError;
use crate::response::MAX_FETCH_PAYLOAD_BYTES;
use crate::wire::Reader;

/// `int32 length` + `int32 crc32c`.
pub const RECORD_HEADER_BYTES: usize = 8;

/// Largest payload a record may have: 8 MiB − 26 = 8 388 582 bytes, so that the record with its
/// header fits one FETCH payload ([`MAX_FETCH_PAYLOAD_BYTES`]).
///
/// A FETCH payload is raw segment bytes (records with their 8-byte headers) and never more than
/// `MAX_FETCH_PAYLOAD_BYTES`, so a larger record could be written but no FETCH could ever return
/// it whole: every consumer reaching it would stop there for good. A PRODUCE frame alone does not
/// prevent that — to a topic of one or two characters it has room for a payload up to 2 bytes
/// larger — so a broker refuses a larger record with RECORD_TOO_LARGE and a client refuses it
/// before sending ([`RecordSetBuilder::push`]).
pub const MAX_RECORD_PAYLOAD_BYTES: usize = MAX_FETCH_PAYLOAD_BYTES - RECORD_HEADER_BYTES;

/// CRC-32C (Castagnoli) of `bytes`, as stored in a record header.
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}

/// Bytes a record with a payload of `payload_len` bytes occupies on disk.
pub const fn record_bytes(payload_len: usize) -> usize {
    RECORD_HEADER_BYTES + payload_len
}

/// Appends one record in the on-disk format (length, CRC, payload).
pub fn encode_record<B: BufMut>(payload: &[u8], buf: &mut B) {
    buf.put_i32(payload.len() as i32);
    buf.put_u32(crc32c(payload));
    buf.put_slice(payload);
}

/// One whole record found by a [`RecordScanner`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScannedRecord<'a> {
    /// Byte position of the record's length field in the scanned buffer.
    pub position: usize,
    /// The CRC stored in the record header.
    pub stored_crc: u32,
    /// The payload.
    pub payload: &'a [u8],
}

impl ScannedRecord<'_> {
    /// True when the stored CRC matches the payload.
    pub fn crc_matches(&self) -> bool {
        crc32c(self.payload) == self.stored_crc
    }

    /// Bytes the record occupies, header included.
    pub fn encoded_len(&self) -> usize {
        record_bytes(self.payload.len())
    }
}

/// How a scan ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanEnd {
    /// The buffer ended exactly after a whole record (or was empty).
    Clean,
    /// A length field of zero: unwritten space (a pre-sized segment's tail, or a record whose
    /// length had not been written when the process died).
    ZeroLength {
        /// Position of the zero length field.
        position: usize,
    },
    /// A negative length field: never written by any booblik writer.
    NegativeLength {
        /// Position of the length field.
        position: usize,
        /// The length as read.
        length: i32,
    },
    /// The buffer ends inside a record. `declared_len` is the payload length when the length
    /// field itself was complete.
    Partial {
        /// Position of the partial record.
        position: usize,
        /// Payload length from the record header, when the length field was complete.
        declared_len: Option<usize>,
        /// Bytes of the partial record present in the buffer.
        available: usize,
    },
}

impl ScanEnd {
    /// Position where the last whole record ended.
    pub fn position(&self, buf_len: usize) -> usize {
        match *self {
            ScanEnd::Clean => buf_len,
            ScanEnd::ZeroLength { position }
            | ScanEnd::NegativeLength { position, .. }
            | ScanEnd::Partial { position, .. } => position,
        }
    }
}

/// Iterates over the whole records at the start of a buffer. CRCs are *not* checked here: a
/// client treats a mismatch as an error naming the offset, while recovery treats one as a torn
/// write to be examined, so the caller decides ([`ScannedRecord::crc_matches`]).
#[derive(Debug, Clone)]
pub struct RecordScanner<'a> {
    buf: &'a [u8],
    pos: usize,
    end: Option<ScanEnd>,
}

impl<'a> RecordScanner<'a> {
    /// Scans `buf` from its start.
    pub fn new(buf: &'a [u8]) -> Self {
        Self {
            buf,
            pos: 0,
            end: None,
        }
    }

    /// Position just past the last record yielded so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// How the scan ended; `None` until the iterator has returned `None`.
    pub fn end(&self) -> Option<ScanEnd> {
        self.end
    }

    fn stop(&mut self, end: ScanEnd) -> Option<ScannedRecord<'a>> {
        self.end = Some(end);
        None
    }
}

impl<'a> Iterator for RecordScanner<'a> {
    type Item = ScannedRecord<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.end.is_some() {
            return None;
        }
        let position = self.pos;
        let rest = &self.buf[position..];
        if rest.is_empty() {
            return self.stop(ScanEnd::Clean);
        }
        let Some(len) = rest.first_chunk::<4>().map(|b| i32::from_be_bytes(*b)) else {
            return self.stop(ScanEnd::Partial {
                position,
                declared_len: None,
                available: rest.len(),
            });
        };
        if len == 0 {
            return self.stop(ScanEnd::ZeroLength { position });
        }
        if len < 0 {
            return self.stop(ScanEnd::NegativeLength {
                position,
                length: len,
            });
        }
        let payload_len = len as usize;
        let total = record_bytes(payload_len);
        if rest.len() < total {
            return self.stop(ScanEnd::Partial {
                position,
                declared_len: Some(payload_len),
                available: rest.len(),
            });
        }
        let stored_crc = u32::from_be_bytes([rest[4], rest[5], rest[6], rest[7]]);
        self.pos += total;
        Some(ScannedRecord {
            position,
            stored_crc,
            payload: &rest[RECORD_HEADER_BYTES..total],
        })
    }
}

/// The records of a PRODUCE request: `{int32 size, bytes}×recordCount`, kept in wire form so the
/// broker can append them without a per-record allocation.
///
/// Invariant: `count ≥ 1`, every size ≥ 1, and the sizes exactly cover `bytes`.
#[derive(Clone, PartialEq, Eq)]
pub struct RecordSet {
    count: usize,
    bytes: Bytes,
}

impl std::fmt::Debug for RecordSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordSet")
            .field("count", &self.count)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

impl RecordSet {
    /// Builds a set from payloads. Refuses an empty set and an empty payload, which the protocol
    /// forbids.
    pub fn from_payloads<I, P>(payloads: I) -> Result<Self, WireError>
    where
        I: IntoIterator<Item = P>,
        P: AsRef<[u8]>,
    {
        let mut builder = RecordSetBuilder::new();
        for payload in payloads {
            builder.push(payload.as_ref())?;
        }
        builder.finish()
    }

    /// Number of records (≥ 1).
    pub fn count(&self) -> usize {
        self.count
    }

    /// The payloads, in order.
    pub fn iter(&self) -> RecordSetIter<'_> {
        RecordSetIter { rest: &self.bytes }
    }

    /// Sum of payload lengths.
    pub fn payload_bytes(&self) -> usize {
        self.bytes.len() - 4 * self.count
    }

    /// Bytes these records occupy in a segment, headers included.
    pub fn log_bytes(&self) -> usize {
        self.payload_bytes() + RECORD_HEADER_BYTES * self.count
    }

    /// The largest payload, for the RECORD_TOO_LARGE check.
    pub fn max_payload_len(&self) -> usize {
        self.iter().map(<[u8]>::len).max().unwrap_or(0)
    }

    /// The records as they travel in a PRODUCE: `{int32 size, bytes}×count`, without the count.
    /// A clone of the handle, not a copy: what a vectored write sends after the request's head
    /// ([`crate::Request::encode_vectored`]).
    pub fn wire_bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// `int32 recordCount` + records.
    pub(crate) fn encoded_len(&self) -> usize {
        4 + self.bytes.len()
    }

    pub(crate) fn encode<B: BufMut>(&self, buf: &mut B) {
        buf.put_i32(self.count as i32);
        buf.put_slice(&self.bytes);
    }

    /// Reads `int32 recordCount, {int32 size, bytes}×recordCount` from `r`, a reader over all of
    /// `source`; the set is a slice of `source`, not a copy.
    pub(crate) fn decode(r: &mut Reader<'_>, source: &Bytes) -> Result<Self, WireError> {
        let count = r.i32()?;
        if count <= 0 {
            return Err(WireError::InvalidField {
                field: "recordCount",
                value: i64::from(count),
                reason: "must be at least 1",
            });
        }
        // Walk the sizes (no allocation), then take the region as a slice of the frame.
        let start = r.position();
        for _ in 0..count {
            let size = r.i32()?;
            if size <= 0 {
                return Err(WireError::InvalidField {
                    field: "record size",
                    value: i64::from(size),
                    reason: "records are never empty",
                });
            }
            r.take(size as usize)?;
        }
        let bytes = source.slice(start..r.position());
        Ok(Self {
            count: count as usize,
            bytes,
        })
    }
}

/// Iterator over the payloads of a [`RecordSet`].
#[derive(Debug, Clone)]
pub struct RecordSetIter<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for RecordSetIter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let (size, rest) = self.rest.split_first_chunk::<4>()?;
        let size = i32::from_be_bytes(*size) as usize;
        let (payload, rest) = rest.split_at(size);
        self.rest = rest;
        Some(payload)
    }
}

impl<'a> IntoIterator for &'a RecordSet {
    type Item = &'a [u8];
    type IntoIter = RecordSetIter<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Accumulates payloads into a [`RecordSet`] (what a batching producer fills).
#[derive(Debug, Default)]
pub struct RecordSetBuilder {
    count: usize,
    bytes: BytesMut,
}

impl RecordSetBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty builder with room for `wire_bytes` of records (sizes included) before it must
    /// grow. A producer that knows how large its batches get avoids re-allocating (and copying)
    /// the batch as it fills.
    pub fn with_capacity(wire_bytes: usize) -> Self {
        Self {
            count: 0,
            bytes: BytesMut::with_capacity(wire_bytes),
        }
    }

    /// Appends a payload. Refuses an empty one and one larger than
    /// [`MAX_RECORD_PAYLOAD_BYTES`] (no FETCH could return it); a refused payload leaves the
    /// builder as it was.
    pub fn push(&mut self, payload: &[u8]) -> Result<(), WireError> {
        if payload.is_empty() {
            return Err(WireError::InvalidField {
                field: "record size",
                value: 0,
                reason: "records are never empty",
            });
        }
        if payload.len() > MAX_RECORD_PAYLOAD_BYTES {
            return Err(WireError::InvalidField {
                field: "record size",
                value: payload.len() as i64,
                reason: "larger than MAX_RECORD_PAYLOAD_BYTES (8 MiB - 26): \
                         no FETCH could return the record",
            });
        }
        // Below MAX_RECORD_PAYLOAD_BYTES, so it fits an int32.
        self.bytes.put_i32(payload.len() as i32);
        self.bytes.put_slice(payload);
        self.count += 1;
        Ok(())
    }

    /// Records pushed so far.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Bytes the records take in a PRODUCE body so far (sizes included).
    pub fn wire_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Bytes of records the builder holds room for before it must grow.
    pub fn capacity(&self) -> usize {
        self.bytes.capacity()
    }

    /// True when nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The set. Refuses an empty set.
    pub fn finish(self) -> Result<RecordSet, WireError> {
        if self.count == 0 {
            return Err(WireError::InvalidField {
                field: "recordCount",
                value: 0,
                reason: "must be at least 1",
            });
        }
        Ok(RecordSet {
            count: self.count,
            bytes: self.bytes.freeze(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(payloads: &[&[u8]]) -> Vec<u8> {
        let mut buf = Vec::new();
        for p in payloads {
            encode_record(p, &mut buf);
        }
        buf
    }

    #[test]
    fn the_scanner_yields_whole_records_and_ends_clean() {
        let buf = records(&[b"a", b"bc", b"def"]);
        let mut scanner = RecordScanner::new(&buf);
        let got: Vec<&[u8]> = scanner.by_ref().map(|r| r.payload).collect();
        assert_eq!(got, vec![&b"a"[..], b"bc", b"def"]);
        assert_eq!(scanner.end(), Some(ScanEnd::Clean));
        assert_eq!(scanner.position(), buf.len());
    }

    #[test]
    fn a_cut_inside_a_record_is_reported_as_a_partial_tail() {
        let buf = records(&[b"hello", b"world!"]);
        let cut = &buf[..buf.len() - 2];
        let mut scanner = RecordScanner::new(cut);
        assert_eq!(scanner.by_ref().count(), 1);
        assert_eq!(
            scanner.end(),
            Some(ScanEnd::Partial {
                position: 13,
                declared_len: Some(6),
                available: cut.len() - 13
            })
        );
        let mut scanner = RecordScanner::new(&buf[..2]);
        assert_eq!(scanner.next(), None);
        assert_eq!(
            scanner.end(),
            Some(ScanEnd::Partial {
                position: 0,
                declared_len: None,
                available: 2
            })
        );
    }

    #[test]
    fn zero_length_marks_unwritten_space() {
        let mut buf = records(&[b"x"]);
        buf.extend_from_slice(&[0; 64]);
        let mut scanner = RecordScanner::new(&buf);
        assert_eq!(scanner.by_ref().count(), 1);
        assert_eq!(scanner.end(), Some(ScanEnd::ZeroLength { position: 9 }));
    }

    #[test]
    fn a_flipped_payload_byte_fails_the_crc() {
        let mut buf = records(&[b"payload"]);
        assert!(RecordScanner::new(&buf).next().unwrap().crc_matches());
        buf[10] ^= 1;
        assert!(!RecordScanner::new(&buf).next().unwrap().crc_matches());
    }

    #[test]
    fn record_sets_refuse_empty_records_and_empty_sets() {
        assert!(RecordSet::from_payloads([b"".as_slice()]).is_err());
        assert!(RecordSet::from_payloads(Vec::<Vec<u8>>::new()).is_err());
        let set = RecordSet::from_payloads([b"ab".as_slice(), b"cde"]).unwrap();
        assert_eq!(set.count(), 2);
        assert_eq!(set.payload_bytes(), 5);
        assert_eq!(set.log_bytes(), 5 + 16);
        assert_eq!(set.max_payload_len(), 3);
        assert_eq!(set.iter().collect::<Vec<_>>(), vec![&b"ab"[..], b"cde"]);
    }
}
