//! The part of a partition's log that readers see: the segment list, the high watermark and the
//! log start offset, and the read path over them.
//!
//! The writer thread is the only mutator. It publishes in this order, which is what makes an
//! offset visible only after its bytes are written:
//!
//! 1. record bytes into the segment file (or mapping), and index entries;
//! 2. the segment's end (`Segment::publish_end`, release);
//! 3. the high watermark (release), then the [`LogEnd`] on a `watch` channel that wakes long polls.
//!
//! A reader loads the high watermark (acquire) first, so every segment end it then loads covers
//! at least the records below that watermark.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use booblik_protocol::probe::Stamp;
use tokio::sync::watch;

use super::error::StorageError;
use super::read_slice::ReadSlice;
use super::segment::Segment;

/// Where the log ends, as published to long polls.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LogEnd {
    /// Offset the next record will get.
    pub(crate) high_watermark: i64,
    /// Bytes of records in the log, counted since the partition was opened.
    pub(crate) log_bytes: u64,
    /// When it was published (the hop probe).
    pub(crate) published: Stamp,
}

/// Reader-visible state of one partition's log.
#[derive(Debug)]
pub(crate) struct LogView {
    /// Oldest first; never empty (the last one is the active segment).
    segments: RwLock<Vec<Arc<Segment>>>,
    high_watermark: AtomicI64,
    log_start_offset: AtomicI64,
    end: watch::Sender<LogEnd>,
}

impl LogView {
    /// A view over recovered `segments` (not empty), the last of which is active.
    pub(crate) fn new(segments: Vec<Arc<Segment>>) -> Self {
        assert!(!segments.is_empty(), "a log always has an active segment");
        let active = &segments[segments.len() - 1];
        let end = LogEnd {
            high_watermark: active.next_offset(),
            log_bytes: active.log_bytes_before() + u64::from(active.end().position),
            published: Stamp::now(),
        };
        let log_start_offset = segments[0].base_offset();
        let (sender, _) = watch::channel(end);
        Self {
            segments: RwLock::new(segments),
            high_watermark: AtomicI64::new(end.high_watermark),
            log_start_offset: AtomicI64::new(log_start_offset),
            end: sender,
        }
    }

    /// Offset the next record will get; every offset below it is readable.
    pub(crate) fn high_watermark(&self) -> i64 {
        self.high_watermark.load(Ordering::Acquire)
    }

    /// First offset still in the log.
    pub(crate) fn log_start_offset(&self) -> i64 {
        self.log_start_offset.load(Ordering::Acquire)
    }

    /// Number of segments.
    pub(crate) fn segment_count(&self) -> usize {
        self.read_segments().len()
    }

    /// Sparse index entries over all segments.
    pub(crate) fn index_entries(&self) -> usize {
        self.read_segments().iter().map(|s| s.index_len()).sum()
    }

    /// The segments, oldest first.
    pub(crate) fn snapshot(&self) -> Vec<Arc<Segment>> {
        self.read_segments().clone()
    }

    /// A receiver of [`LogEnd`] updates, for long polls.
    pub(crate) fn subscribe(&self) -> watch::Receiver<LogEnd> {
        self.end.subscribe()
    }

    /// Writer: the records below `end.high_watermark` are written and their segment ends
    /// published. Publishes the watermark, then wakes long polls.
    pub(crate) fn publish(&self, end: LogEnd) {
        self.high_watermark
            .store(end.high_watermark, Ordering::Release);
        self.end.send_replace(end);
    }

    /// Writer: a new active segment was created (and its directory entry fsynced).
    pub(crate) fn push_segment(&self, segment: Arc<Segment>) {
        self.write_segments().push(segment);
    }

    /// Writer (retention): removes the `count` oldest segments, which must all be sealed, and
    /// moves the log start offset. Returns them.
    pub(crate) fn remove_oldest(&self, count: usize) -> Vec<Arc<Segment>> {
        let mut segments = self.write_segments();
        let count = count.min(segments.len() - 1);
        let removed: Vec<_> = segments.drain(..count).collect();
        self.log_start_offset
            .store(segments[0].base_offset(), Ordering::Release);
        removed
    }

    /// The bytes from the record at `fetch_offset` to at most `max_bytes`, within one segment,
    /// waiting for the disk if the lookup must.
    pub(crate) fn read(
        &self,
        fetch_offset: i64,
        max_bytes: u32,
    ) -> Result<ReadSlice, StorageError> {
        // Locating again ends: `slice_at` refuses only after a roll (the next lookup finds the
        // next segment) or a retention (the next lookup is out of range).
        loop {
            let at = self
                .locate(fetch_offset, false)?
                .expect("a lookup that may wait for the disk always ends");
            if let Some(slice) = self.slice_at(&at, max_bytes) {
                return Ok(slice);
            }
        }
    }

    /// Finds where the record at `fetch_offset` starts, once, for a FETCH: the segment and the
    /// byte position in it, as a [`FetchPosition`] that pins nothing (a long poll waits holding
    /// it). [`StorageError::OffsetOutOfRange`] outside `[log_start_offset, high_watermark]`.
    /// With `cached_only`, `Ok(None)` when the walk from the sparse index entry before the
    /// record needs bytes the page cache does not hold: then locate again where waiting for the
    /// disk is fine.
    pub(crate) fn locate(
        &self,
        fetch_offset: i64,
        cached_only: bool,
    ) -> Result<Option<FetchPosition>, StorageError> {
        let high_watermark = self.high_watermark();
        let segment = {
            let segments = self.read_segments();
            let log_start_offset = segments[0].base_offset();
            // The writer publishes the active segment's end before the watermark, and a slice cut
            // in between returns the records past the watermark (`slice_at`): a follower may ask
            // for the offset after them before the watermark catches up. That offset is in range.
            let high_watermark = high_watermark.max(segments[segments.len() - 1].next_offset());
            if fetch_offset < log_start_offset || fetch_offset > high_watermark {
                return Err(StorageError::OffsetOutOfRange {
                    offset: fetch_offset,
                    log_start_offset,
                    high_watermark,
                });
            }
            let after = segments.partition_point(|s| s.base_offset() <= fetch_offset);
            Arc::clone(&segments[after - 1])
        };
        let end = segment.end();
        let position = if cached_only {
            match segment.cached_position_of(fetch_offset, end)? {
                Some(position) => position,
                None => return Ok(None),
            }
        } else {
            segment.position_of(fetch_offset, end)?
        };
        Ok(Some(FetchPosition {
            offset: fetch_offset,
            segment_base_offset: segment.base_offset(),
            position,
            log_bytes: segment.log_bytes_before() + u64::from(position),
        }))
    }

    /// The bytes from `at` to at most `max_bytes`, within its segment, pinning the segment:
    /// no lookup, only the segment list's binary search. `None` when `at` no longer leads to a
    /// record of its segment: the segment was dropped by retention, or `at` was the end of the
    /// active segment and the log rolled meanwhile (the record is at the start of the next
    /// one). Then [`LogView::locate`] again.
    pub(crate) fn slice_at(&self, at: &FetchPosition, max_bytes: u32) -> Option<ReadSlice> {
        let high_watermark = self.high_watermark();
        let (segment, is_last) = {
            let segments = self.read_segments();
            let index = segments
                .binary_search_by_key(&at.segment_base_offset, |s| s.base_offset())
                .ok()?;
            (Arc::clone(&segments[index]), index + 1 == segments.len())
        };
        let end = segment.end();
        // A segment's end only grows, so `at` is within it; at its very end, the record is in
        // the next segment if there is one.
        if at.position >= end.position && !is_last {
            return None;
        }
        // Empty at the end of the active segment: at the high watermark.
        let len = max_bytes.min(end.position.saturating_sub(at.position));
        // Bytes written after the watermark was loaded may be in the slice; report a watermark
        // that covers them.
        let slice_high_watermark = high_watermark.max(segment.next_offset_at(end));
        Some(ReadSlice::new(
            segment,
            u64::from(at.position),
            len,
            slice_high_watermark,
        ))
    }

    fn read_segments(&self) -> RwLockReadGuard<'_, Vec<Arc<Segment>>> {
        self.segments
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write_segments(&self) -> RwLockWriteGuard<'_, Vec<Arc<Segment>>> {
        self.segments
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Where a FETCH's record starts, found once by [`LogView::locate`]. Holds no pin: retention may
/// drop its segment meanwhile, which [`LogView::slice_at`] notices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchPosition {
    offset: i64,
    segment_base_offset: i64,
    position: u32,
    log_bytes: u64,
}

impl FetchPosition {
    /// The offset located.
    pub fn offset(&self) -> i64 {
        self.offset
    }

    /// Where the record starts, in bytes of the log since the partition was opened: what a
    /// long poll compares with the log's end.
    pub fn log_bytes(&self) -> u64 {
        self.log_bytes
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::storage::index::SparseIndex;
    use crate::storage::segment::SegmentEnd;

    /// Between the writer's two publications (the segment's end, then the watermark) a FETCH
    /// returns the new record, and its follower's next FETCH asks for the offset after it.
    #[test]
    fn the_offset_after_records_published_before_the_watermark_is_in_range() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("segment");
        let mut record = Vec::new();
        booblik_protocol::encode_record(b"claim", &mut record);
        let mut file = std::fs::File::options()
            .create_new(true)
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        file.write_all(&record).unwrap();
        let segment = Arc::new(Segment::new(
            0,
            0,
            path,
            file,
            SegmentEnd::default(),
            SparseIndex::new(4096),
        ));
        let view = LogView::new(vec![Arc::clone(&segment)]);
        assert_eq!(view.high_watermark(), 0);
        segment.publish_end(SegmentEnd {
            record_count: 1,
            position: record.len() as u32,
        });
        let first = view.locate(0, false).unwrap().unwrap();
        let slice = view.slice_at(&first, 4096).unwrap();
        assert_eq!(
            (slice.len() as usize, slice.high_watermark()),
            (record.len(), 1)
        );
        let next = view.locate(1, false).unwrap().unwrap();
        assert_eq!(next.offset(), 1);
        assert!(matches!(
            view.locate(2, false),
            Err(StorageError::OffsetOutOfRange { .. })
        ));
    }
}
