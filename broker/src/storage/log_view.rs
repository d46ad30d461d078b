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

use tokio::sync::watch;

use super::error::StorageError;
use super::read_slice::ReadSlice;
use super::segment::Segment;

/// Where the log ends, as published to long polls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LogEnd {
    /// Offset the next record will get.
    pub(crate) high_watermark: i64,
    /// Bytes of records in the log, counted since the partition was opened.
    pub(crate) log_bytes: u64,
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

    /// The bytes from the record at `fetch_offset` to at most `max_bytes`, within one segment.
    pub(crate) fn read(
        &self,
        fetch_offset: i64,
        max_bytes: u32,
    ) -> Result<ReadSlice, StorageError> {
        Ok(self
            .read_with(fetch_offset, max_bytes, false)?
            .expect("a read that may wait for the disk always ends"))
    }

    /// [`LogView::read`] without waiting for the disk: `None` when finding the record's position
    /// (the walk from the sparse index entry before it) needs bytes the page cache does not hold.
    /// The slice's own bytes are not read here; see [`ReadSlice::is_cached`].
    pub(crate) fn read_cached(
        &self,
        fetch_offset: i64,
        max_bytes: u32,
    ) -> Result<Option<ReadSlice>, StorageError> {
        self.read_with(fetch_offset, max_bytes, true)
    }

    fn read_with(
        &self,
        fetch_offset: i64,
        max_bytes: u32,
        cached_only: bool,
    ) -> Result<Option<ReadSlice>, StorageError> {
        let high_watermark = self.high_watermark();
        let segment = {
            let segments = self.read_segments();
            let log_start_offset = segments[0].base_offset();
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
        let len = if fetch_offset == high_watermark {
            0
        } else {
            max_bytes.min(end.position - position)
        };
        // Bytes written after the watermark was loaded may be in the slice; report a watermark
        // that covers them.
        let slice_high_watermark = high_watermark.max(segment.next_offset_at(end));
        Ok(Some(ReadSlice::new(
            segment,
            u64::from(position),
            len,
            slice_high_watermark,
        )))
    }

    /// Where the record at `offset` starts, in bytes of the log since open; `None` when `offset`
    /// is not in the log. Pins the segment only for the duration of the lookup.
    pub(crate) fn log_position_of(&self, offset: i64) -> Option<u64> {
        match self.log_position_with(offset, false) {
            LogPosition::At(position) => Some(position),
            LogPosition::NotInLog => None,
            LogPosition::NeedsDisk => unreachable!("a lookup that may wait for the disk ends"),
        }
    }

    /// [`LogView::log_position_of`] without waiting for the disk.
    pub(crate) fn cached_log_position_of(&self, offset: i64) -> LogPosition {
        self.log_position_with(offset, true)
    }

    fn log_position_with(&self, offset: i64, cached_only: bool) -> LogPosition {
        let segment = {
            let segments = self.read_segments();
            if offset < segments[0].base_offset() {
                return LogPosition::NotInLog;
            }
            let after = segments.partition_point(|s| s.base_offset() <= offset);
            Arc::clone(&segments[after - 1])
        };
        let end = segment.end();
        if offset > segment.next_offset_at(end) {
            return LogPosition::NotInLog;
        }
        let position = if cached_only {
            segment.cached_position_of(offset, end)
        } else {
            segment.position_of(offset, end).map(Some)
        };
        match position {
            Ok(Some(position)) => LogPosition::At(segment.log_bytes_before() + u64::from(position)),
            Ok(None) => LogPosition::NeedsDisk,
            Err(_) => LogPosition::NotInLog,
        }
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

/// Where a record starts in the log, as [`LogView::cached_log_position_of`] found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogPosition {
    /// At this many bytes of the log since open.
    At(u64),
    /// The offset is not in the log (or its segment is damaged).
    NotInLog,
    /// Finding it needs bytes the page cache does not hold.
    NeedsDisk,
}
