//! A range of raw segment bytes handed to a FETCH, pinning its segment while it lives.

use std::fs::File;
use std::sync::Arc;

use bytes::Bytes;

use super::error::StorageError;
use super::segment::Segment;

/// `len` bytes of one segment file from `position`: whole records from the fetch offset, possibly
/// ending in the middle of one, never crossing into the next segment.
///
/// The slice holds an `Arc` to its segment, so retention cannot unlink the file until the slice
/// is dropped: the server sends the bytes (`sendfile` from [`ReadSlice::file`] at
/// [`ReadSlice::position`]) and then drops the slice.
pub struct ReadSlice {
    segment: Arc<Segment>,
    position: u64,
    len: u32,
    high_watermark: i64,
}

impl std::fmt::Debug for ReadSlice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadSlice")
            .field("segment", &self.segment.path())
            .field("position", &self.position)
            .field("len", &self.len)
            .field("high_watermark", &self.high_watermark)
            .finish()
    }
}

impl ReadSlice {
    pub(crate) fn new(segment: Arc<Segment>, position: u64, len: u32, high_watermark: i64) -> Self {
        Self {
            segment,
            position,
            len,
            high_watermark,
        }
    }

    /// The partition's high watermark when the slice was cut; at least one past every record
    /// that starts in the slice.
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }

    /// The segment file to send from.
    pub fn file(&self) -> &File {
        self.segment.file()
    }

    /// Byte position of the slice in [`ReadSlice::file`].
    pub fn position(&self) -> u64 {
        self.position
    }

    /// Bytes in the slice.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// True for the empty slice returned at the high watermark.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Base offset of the segment the slice lies in.
    pub fn segment_base_offset(&self) -> i64 {
        self.segment.base_offset()
    }

    /// Reads the slice's bytes into `buf` (`pread`) and returns them: the heap FETCH mode, with a
    /// buffer its session reuses. `buf` only grows, and only the growth is zero-filled, so a
    /// session that keeps fetching pays neither an allocation nor a memset per FETCH.
    pub fn read_into<'b>(&self, buf: &'b mut Vec<u8>) -> Result<&'b [u8], StorageError> {
        let len = self.len as usize;
        if buf.len() < len {
            buf.resize(len, 0);
        }
        let bytes = &mut buf[..len];
        self.segment.read_exact_at(bytes, self.position)?;
        Ok(bytes)
    }

    /// A heap copy of exactly the slice's bytes (`pread`), for tests.
    pub fn to_bytes(&self) -> Result<Bytes, StorageError> {
        let mut buf = vec![0u8; self.len as usize];
        self.segment.read_exact_at(&mut buf, self.position)?;
        Ok(Bytes::from(buf))
    }
}
