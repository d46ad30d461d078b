//! The sparse offset index of one segment: "record n starts at byte p", for one record in every
//! `interval_bytes` bytes.
//!
//! A dense index (one entry per record) would cost 8 bytes per record of memory and rebuild time
//! for nothing: a read only needs a starting point near its record, then walks forward over the
//! length prefixes. So the index keeps an entry whenever at least `interval_bytes` were written
//! since the previous entry, and a lookup is a binary search for the last entry at or before the
//! wanted offset followed by a forward scan of at most about `interval_bytes` (plus one record).
//!
//! The index is never stored: recovery rebuilds it while validating the segment, which it has to
//! read anyway. Offsets are kept relative to the segment's base offset and positions as `u32`,
//! which [`MAX_SEGMENT_BYTES`](super::config::MAX_SEGMENT_BYTES) guarantees is enough.

/// One index entry: the record with offset `base + relative_offset` starts at `position`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IndexEntry {
    /// Offset minus the segment's base offset.
    pub(crate) relative_offset: u32,
    /// Byte position of the record's length field in the segment file.
    pub(crate) position: u32,
}

/// The in-memory sparse index of one segment.
#[derive(Debug, Clone)]
pub(crate) struct SparseIndex {
    interval_bytes: u32,
    entries: Vec<IndexEntry>,
}

impl SparseIndex {
    /// An empty index that will keep one entry per `interval_bytes` (at least 1).
    pub(crate) fn new(interval_bytes: u32) -> Self {
        Self {
            interval_bytes: interval_bytes.max(1),
            entries: Vec::new(),
        }
    }

    /// Called for every record appended (or found by recovery), in order. Adds an entry for the
    /// first record and then whenever `interval_bytes` have passed since the last entry. Panics
    /// on a record that is not after the last entry (offsets and positions only grow).
    pub(crate) fn on_record(&mut self, relative_offset: u32, position: u32) {
        let due = match self.entries.last() {
            None => true,
            Some(last) => {
                // Records come in order, so entries are monotonic in both offset and position;
                // a binary search over anything else would land on the wrong record.
                assert!(
                    relative_offset > last.relative_offset && position > last.position,
                    "index entry ({relative_offset}, {position}) is not after {last:?}"
                );
                position - last.position >= self.interval_bytes
            }
        };
        if due {
            self.entries.push(IndexEntry {
                relative_offset,
                position,
            });
        }
    }

    /// The last entry at or before `relative_offset`: where a forward scan for that record
    /// starts. The start of the segment when no entry precedes it.
    pub(crate) fn floor(&self, relative_offset: u32) -> IndexEntry {
        let after = self
            .entries
            .partition_point(|e| e.relative_offset <= relative_offset);
        match after {
            0 => IndexEntry {
                relative_offset: 0,
                position: 0,
            },
            n => self.entries[n - 1],
        }
    }

    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index_of_records(record_bytes: u32, count: u32, interval_bytes: u32) -> SparseIndex {
        let mut index = SparseIndex::new(interval_bytes);
        for n in 0..count {
            index.on_record(n, n * record_bytes);
        }
        index
    }

    #[test]
    fn the_index_keeps_about_one_entry_per_interval() {
        // 1000 records of 100 bytes = 100 000 bytes; one entry per 4096 bytes → 25 entries.
        let index = index_of_records(100, 1000, 4096);
        assert_eq!(index.len(), 25);
    }

    #[test]
    fn floor_finds_the_last_entry_at_or_before_the_offset() {
        let index = index_of_records(100, 1000, 4096);
        // Entries sit at records 0, 41, 82, … (41 × 100 ≥ 4096).
        assert_eq!(index.floor(0).relative_offset, 0);
        assert_eq!(index.floor(40).relative_offset, 0);
        assert_eq!(index.floor(41).relative_offset, 41);
        assert_eq!(index.floor(81).relative_offset, 41);
        assert_eq!(index.floor(999).relative_offset, 984);
        let entry = index.floor(500);
        assert!(entry.relative_offset <= 500 && 500 - entry.relative_offset < 41);
        assert_eq!(entry.position, entry.relative_offset * 100);
    }

    #[test]
    fn an_empty_index_starts_scans_at_the_beginning() {
        let index = SparseIndex::new(4096);
        assert_eq!(
            index.floor(7),
            IndexEntry {
                relative_offset: 0,
                position: 0
            }
        );
    }
}
