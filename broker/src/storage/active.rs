//! The writer's side of the segment being appended to, in either write mode.
//!
//! Only the partition's writer thread owns an [`ActiveSegment`]. It keeps the private write
//! position (ahead of what readers see while a batch is being written), the mapping in MAPPED
//! mode, and how far the last fsync reached. Readers see the segment through the shared
//! [`Segment`] once [`ActiveSegment::publish`] has run.
//!
//! | | MAPPED | FILE |
//! |---|---|---|
//! | file size while active | capacity (pre-sized, zeros) | bytes written |
//! | append | copy into the mapping: payload, CRC, length last | one `pwrite` per batch |
//! | end of the log on disk | the first zero length | the end of the file |
//! | durable after | `msync` of the dirty range + `fdatasync` | `fdatasync` |
//! | sealing / closing | sync, unmap, trim the file to the bytes written | sync |

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use booblik_protocol::{encode_record, record_bytes};

use super::config::WriteMode;
use super::durability::Durability;
use super::error::{IoContext, StorageError};
use super::index::{IndexEntry, SparseIndex};
use super::mapping::SegmentMapping;
use super::segment::{Segment, SegmentEnd, offset_after, segment_file_name};

/// The segment the writer appends to.
#[derive(Debug)]
pub(crate) struct ActiveSegment {
    segment: Arc<Segment>,
    mapping: Option<SegmentMapping>,
    capacity_bytes: u64,
    written: SegmentEnd,
    synced_position: u32,
    /// True once sealed: no more writes.
    sealed: bool,
    /// FILE mode: a batch is encoded here, then written with one `pwrite`.
    scratch: Vec<u8>,
}

impl ActiveSegment {
    /// Creates a new, empty segment file for `base_offset` in `dir`. The caller fsyncs `dir`.
    pub(crate) fn create(
        dir: &Path,
        base_offset: i64,
        log_bytes_before: u64,
        mode: WriteMode,
        capacity_bytes: u64,
        index_interval_bytes: u32,
    ) -> Result<Self, StorageError> {
        let path = dir.join(segment_file_name(base_offset));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .context(|| format!("creating segment {}", path.display()))?;
        let segment = Segment::new(
            base_offset,
            log_bytes_before,
            path,
            file,
            SegmentEnd::default(),
            SparseIndex::new(index_interval_bytes),
        );
        Self::resume(Arc::new(segment), mode, capacity_bytes)
    }

    /// Continues appending to a recovered segment. In MAPPED mode the file is (re-)extended to
    /// `capacity_bytes` with zeros and mapped.
    pub(crate) fn resume(
        segment: Arc<Segment>,
        mode: WriteMode,
        capacity_bytes: u64,
    ) -> Result<Self, StorageError> {
        let written = segment.end();
        let capacity_bytes = capacity_bytes.max(u64::from(written.position));
        let mapping = match mode {
            WriteMode::File => None,
            WriteMode::Mapped => {
                let file = segment.file();
                let len = file
                    .metadata()
                    .context(|| format!("stat of {}", segment.path().display()))?
                    .len();
                if len < capacity_bytes {
                    file.set_len(capacity_bytes).context(|| {
                        format!(
                            "pre-sizing {} to {capacity_bytes} bytes",
                            segment.path().display()
                        )
                    })?;
                }
                Some(
                    SegmentMapping::map(file, capacity_bytes)
                        .context(|| format!("mapping {}", segment.path().display()))?,
                )
            }
        };
        Ok(Self {
            segment,
            mapping,
            capacity_bytes,
            written,
            synced_position: written.position,
            sealed: false,
            scratch: Vec::new(),
        })
    }

    /// The shared segment.
    pub(crate) fn segment(&self) -> &Arc<Segment> {
        &self.segment
    }

    /// True when no record was ever written to this segment.
    pub(crate) fn is_empty(&self) -> bool {
        self.written.record_count == 0
    }

    /// Offset the next record will get.
    pub(crate) fn next_offset(&self) -> i64 {
        self.segment.next_offset_at(self.written)
    }

    /// Bytes of the partition's log up to the private write position.
    pub(crate) fn log_bytes_end(&self) -> u64 {
        self.segment.log_bytes_before() + u64::from(self.written.position)
    }

    /// Bytes still free for records.
    pub(crate) fn room_bytes(&self) -> u64 {
        self.capacity_bytes - u64::from(self.written.position)
    }

    /// Writes `payloads` (which the caller checked fit) after the last record and indexes them.
    /// Not yet visible to readers: see [`ActiveSegment::publish`].
    pub(crate) fn write(&mut self, payloads: &[&[u8]]) -> Result<(), StorageError> {
        if self.sealed {
            return Err(StorageError::io(
                format!("writing {}", self.segment.path().display()),
                std::io::Error::other("the segment is sealed"),
            ));
        }
        let start = self.written;
        let next_offset = self.next_offset();
        if offset_after(next_offset, payloads.len() as u64).is_none() {
            // `PartitionLog::append` refuses such a batch before writing; this keeps the
            // invariant `next_offset` relies on even if a caller forgets.
            return Err(StorageError::OffsetOverflow {
                high_watermark: next_offset,
                records: payloads.len(),
            });
        }
        let mut entries = Vec::with_capacity(payloads.len());
        let mut position = start.position;
        for (n, payload) in payloads.iter().enumerate() {
            entries.push(IndexEntry {
                relative_offset: start.record_count + n as u32,
                position,
            });
            position += record_bytes(payload.len()) as u32;
        }
        if let Some(mapping) = &mut self.mapping {
            debug_assert!(position as usize <= mapping.len());
            for (payload, entry) in payloads.iter().zip(&entries) {
                mapping.write_record(entry.position as usize, payload);
            }
        } else {
            self.scratch.clear();
            for payload in payloads {
                encode_record(payload, &mut self.scratch);
            }
            self.segment
                .file()
                .write_all_at(&self.scratch, u64::from(start.position))
                .context(|| format!("writing {}", self.segment.path().display()))?;
        }
        self.segment.extend_index(entries);
        self.written = SegmentEnd {
            record_count: start.record_count + payloads.len() as u32,
            position,
        };
        Ok(())
    }

    /// Makes everything written so far visible to readers.
    pub(crate) fn publish(&self) {
        self.segment.publish_end(self.written);
    }

    /// Makes everything written so far durable: `msync` of the dirty range (MAPPED), then
    /// `fdatasync`. A no-op when nothing was written since the last sync.
    pub(crate) fn sync(&mut self, durability: &Durability) -> Result<(), StorageError> {
        let end = self.written.position;
        if end == self.synced_position {
            return Ok(());
        }
        if let Some(mapping) = &self.mapping {
            let from = self.synced_position as usize;
            mapping
                .flush_range(from, end as usize - from)
                .context(|| format!("msync of {}", self.segment.path().display()))?;
        }
        durability.sync_data(self.segment.file(), self.segment.path())?;
        self.synced_position = end;
        Ok(())
    }

    /// Ends appending to this segment (a roll, or closing): publishes, syncs, and in MAPPED mode
    /// unmaps and trims the file to the bytes written, so a sealed segment looks the same in both
    /// modes. Idempotent.
    pub(crate) fn seal(&mut self, durability: &Durability) -> Result<(), StorageError> {
        self.sealed = true;
        self.publish();
        self.sync(durability)?;
        if self.mapping.take().is_some() {
            // The mapping is gone, so shrinking the file cannot fault a mapped access. The trim
            // need not be durable: recovery treats a zero tail as the end either way.
            trim(
                self.segment.file(),
                self.segment.path(),
                self.written.position,
            )?;
        }
        Ok(())
    }
}

fn trim(file: &File, path: &Path, len: u32) -> Result<(), StorageError> {
    file.set_len(u64::from(len))
        .context(|| format!("trimming {} to {len} bytes", path.display()))
}
