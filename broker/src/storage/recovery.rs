//! Opening a partition directory after a clean stop or a crash: find the segments, validate
//! every record, rebuild the sparse indexes, and decide what a damaged tail means.
//!
//! # Rules
//!
//! 1. Every `%020d.log` file is a segment; they are ordered by base offset, and each must start
//!    exactly where the previous one ends (gap-free offsets). `*.log.deleted` files are leftovers
//!    of retention and are removed.
//! 2. Records are read from the start of each segment until the first one that is not a whole,
//!    valid record. Where and how the scan stops is classified:
//!    * the file ends after a whole record: the clean end of the segment;
//!    * a **zero length** follows: the end of the records (the unwritten tail of a MAPPED
//!      segment, or a MAPPED record whose length was not yet written) — see rule 3 for what
//!      may come after it;
//!    * the last record **runs past the end** of the file (or its header is cut): a torn write;
//!    * a whole record whose **CRC does not match**, with no valid record right after it: a torn
//!      write (after a power loss, un-synced pages may persist in any order);
//!    * a whole record whose CRC does not match **followed by a valid record**: damage before a
//!      valid record — in the last segment, what a power loss leaves when un-synced pages were
//!      written back out of order (rule 3); anywhere else, corruption of committed data;
//!    * a **negative length** (no writer ever produces one, and no tear of a length field makes
//!      one): corruption of committed data.
//! 3. Only the *last* segment may end in a torn write or in damage before a valid record: a
//!    segment is fsynced before a FORCED record after it is answered, and every byte of the last
//!    segment before its last successful fsync is durable, so whatever a power loss damages lies
//!    after that point; damage anywhere else is corruption. A *sealed* (not last) segment may end
//!    in a zero length only if nothing but zeros follows it (a MAPPED segment whose trim at the
//!    roll was not yet durable) and the next segment starts right after its records; otherwise
//!    the zero is a damaged length hiding acknowledged records, and that is corruption.
//!    **One exception, the unfinished seal.** A MAPPED segment is sealed (fsynced, then trimmed)
//!    on a thread of its own while appends go on in the next one, and no FORCED record of the
//!    next one is answered before that seal finished (`log.rs`, § The seal in the background).
//!    So the segment *before the last* may be damaged by an OS crash or a power loss while its
//!    length is still the pre-size (`presized_bytes`, made durable when the segment was
//!    created): then it is examined as the last segment (cut at the damage, or quarantined as
//!    above), and the last segment, which can hold only WRITTEN and NONE records, is moved whole
//!    into a quarantine file (`<n>-<segment file name>-at-0.quarantine`). The same holds when
//!    that segment ends in a zero tail but the last one does not start right after its records
//!    (the pages of its last records were lost); a last segment starting *inside* its records
//!    is corruption. Two limits: a trimmed segment (a finished seal fsyncs its trim), or one two
//!    or more before the last (the roll after it waited for its seal), keeps the rule above;
//!    and a sealed segment whose records fill it exactly also has the pre-sized length, so
//!    damage there, if it is the segment before the last, is cut rather than refused (its
//!    successor kept in quarantine), because the two cannot be told apart.
//! 4. **Decide, then cut.** Every segment is examined and the continuity checked before any file
//!    is changed: a refused partition is left byte for byte as it was (the leftover
//!    `*.deleted` files too), so an operator can restore or inspect it.
//! 5. Once the partition is accepted, the last segment's torn tail (or zero-length tail) is cut
//!    off (truncated) and the truncation fsynced, so the next append reuses the offset of the
//!    discarded record. A tail with damage before a valid record is first copied, from the
//!    damaged record to its last non-zero byte, into a **quarantine file** next to the segment
//!    (`<n>-<segment file name>-at-<byte>.quarantine`, `n` six digits counting up per partition), which is
//!    fsynced with its directory before the cut: the records after the damage were never covered
//!    by an fsync (no FORCED answer counts on them) but may have been answered WRITTEN, so they
//!    are kept for an operator rather than deleted. At most [`MAX_QUARANTINE_FILES`] are kept per
//!    partition; the oldest beyond that are removed, with a warning. In MAPPED mode the writer then re-extends the file with zeros. A sealed
//!    segment's tail of zeros is trimmed the same way; it holds no data.
//! 6. Offsets must fit an `int64`, and so must the offset after the last record (the high
//!    watermark): a segment whose name is twenty digits above `i64::MAX`, or whose base offset
//!    plus record count passes `i64::MAX`, is refused as corruption ("offsets overflow").
//!    No writer produces either; a hand-made or damaged file name does.
//! 7. Corruption (damage before the last segment, a negative length, a gap) is never repaired: opening fails with [`StorageError::Corrupt`] naming the file
//!    and byte position, because cutting there would silently delete acknowledged records.
//!
//! A corrupted *length* field hides where the next record starts, so in the last segment it
//! cannot be told apart from a torn write; it is cut like one and logged at `warn` with the
//! number of bytes discarded. A zero length counts as such when anything but zeros follows it
//! within [`TAIL_PEEK_BYTES`]; a tail of zeros is unwritten space, cleared with an `info` line.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use booblik_protocol::{
    MAX_RECORD_PAYLOAD_BYTES, RECORD_HEADER_BYTES, RecordScanner, ScanEnd, crc32c,
};
use tracing::{info, warn};

use super::config::MAX_SEGMENT_BYTES;
use super::durability::Durability;
use super::error::{IoContext, StorageError};
use super::index::SparseIndex;
use super::metrics::RecoveredEnd;
use super::segment::{
    DELETED_SUFFIX, SEGMENT_SUFFIX, SegmentEnd, SegmentFileName, offset_after,
    parse_segment_file_name,
};

/// Bytes read at a time while validating a segment (more when one record is larger).
const RECOVERY_CHUNK_BYTES: usize = 1024 * 1024;
/// The most recovery reads for one record: the largest a producer can send
/// (`MAX_RECORD_PAYLOAD_BYTES`, which `RecordSetBuilder` and the server enforce) with its header.
/// A length field declaring more is damage (a torn write in the last segment, corruption
/// elsewhere), and no buffer is sized by it: a damaged length could otherwise make recovery
/// allocate the rest of a segment (up to 2 GiB).
const MAX_RECOVERY_RECORD_BYTES: usize = MAX_RECORD_PAYLOAD_BYTES + RECORD_HEADER_BYTES;
/// Bytes after a zero length in the last segment looked at to tell unwritten space (zeros) from
/// a torn or damaged record, only to choose the log level of the cut. Bounded so an unclean stop
/// does not read a whole pre-sized MAPPED segment of zeros.
const TAIL_PEEK_BYTES: u64 = 64 * 1024;
/// Quarantine files recovery keeps per partition (`docs/storage.md` § Recovery): each is at
/// most a segment, and one is made only by a power loss that left damage before a valid record.
pub(crate) const MAX_QUARANTINE_FILES: usize = 8;
/// How a quarantine file's name ends.
pub(crate) const QUARANTINE_SUFFIX: &str = ".quarantine";
/// How the reason of a [`StorageError::Corrupt`] starts when offsets cannot be represented.
const OFFSETS_OVERFLOW: &str = "offsets overflow";

/// A segment as recovery left it: valid records only, indexed.
#[derive(Debug)]
pub(crate) struct RecoveredSegment {
    pub(crate) base_offset: i64,
    pub(crate) path: PathBuf,
    pub(crate) file: File,
    pub(crate) end: SegmentEnd,
    pub(crate) index: SparseIndex,
}

/// Where and why the scan of one segment stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ScanStop {
    /// The file ends exactly after the last whole record.
    Clean,
    /// A zero length follows the last whole record.
    ZeroLength,
    /// A torn write follows the last whole record.
    Torn {
        /// What was found.
        reason: String,
    },
    /// A whole record fails its CRC and a valid record follows it: the last segment after a
    /// power loss with out-of-order write-back (quarantined), or corruption anywhere else.
    DamagedBeforeValid {
        /// What was found.
        reason: String,
    },
    /// Committed data is damaged.
    Corrupt {
        /// Byte position of the damage.
        position: u64,
        /// What was found.
        reason: String,
    },
}

/// The result of validating one segment file.
#[derive(Debug)]
pub(crate) struct ScanOutcome {
    pub(crate) end: SegmentEnd,
    pub(crate) index: SparseIndex,
    pub(crate) stop: ScanStop,
}

/// What recovery changes in one segment file once the whole partition is accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Repair {
    /// The file ends after its last record.
    Keep,
    /// The last segment: cut the tail behind its records (a torn write, or bytes behind a zero
    /// length that are not all zeros), loudly.
    CutTornTail { reason: String },
    /// Zeros only behind the records: the unwritten space of a MAPPED segment.
    ClearZeroTail,
    /// The last segment, damage before a valid record: copy the tail to a quarantine file,
    /// then cut it, loudly.
    Quarantine { reason: String },
}

/// One segment, validated but not yet changed.
#[derive(Debug)]
struct ExaminedSegment {
    segment: RecoveredSegment,
    file_len: u64,
    /// The scan stopped at a zero length (rather than the end of the file).
    zero_length: bool,
    repair: Repair,
    /// How the segment ends, as [`PartitionStats::recovered_end`] reports it for the last one.
    ///
    /// [`PartitionStats::recovered_end`]: super::PartitionStats::recovered_end
    recovered_end: RecoveredEnd,
}

/// Recovers every segment of the partition in `dir`, oldest first. An empty result means an
/// empty directory. Nothing on disk is changed unless the whole partition is accepted.
///
/// `presized_bytes` is the length a MAPPED segment is pre-sized to (the configured segment
/// size): the segment before the last still at that length may be one whose seal had not
/// finished (rule 3).
pub(crate) fn recover_partition(
    dir: &Path,
    index_interval_bytes: u32,
    presized_bytes: u64,
    durability: &Durability,
) -> Result<Vec<RecoveredSegment>, StorageError> {
    let listing = list_segments(dir)?;
    let count = listing.segments.len();
    let mut examined: Vec<ExaminedSegment> = Vec::with_capacity(count);
    // The last segment, when the one before it is cut as an unfinished seal (rule 3).
    let mut displaced: Option<PathBuf> = None;
    let mut segments = listing.segments.into_iter().enumerate();
    while let Some((n, (base_offset, path))) = segments.next() {
        let is_last = n + 1 == count;
        // One seal at a time, and the next roll waits for it: only the segment before the last
        // can have been sealing.
        let may_be_sealing = n + 2 == count;
        // The segment before the last lost the pages of its last records (zeros where they
        // were) while its seal had not finished: it ends the log, and the last segment is set
        // aside unexamined, as below.
        if is_last
            && let Some(previous) = examined.last()
            && previous.zero_length
            && previous.file_len == presized_bytes
            // A gap: records lost before the last segment's base. The other mismatch, a last
            // segment starting inside the previous one's records, no power loss makes: it
            // goes on to the continuity check and is refused as corruption.
            && offset_after(
                previous.segment.base_offset,
                u64::from(previous.segment.end.record_count),
            )
            .is_some_and(|end| end < base_offset)
        {
            displaced = Some(path);
            break;
        }
        let segment = match examine_segment(
            base_offset,
            &path,
            is_last,
            index_interval_bytes,
            durability,
        ) {
            Ok(segment) => segment,
            Err(StorageError::Corrupt { .. })
                if may_be_sealing && is_presized(&path, presized_bytes, durability)? =>
            {
                // Damage in a segment whose seal did not finish: what an OS crash or a power
                // loss leaves there, not corruption. It ends the log.
                let segment =
                    examine_segment(base_offset, &path, true, index_interval_bytes, durability)?;
                if let Some(previous) = examined.last() {
                    check_continuity(previous, &segment.segment)?;
                }
                examined.push(segment);
                displaced = segments.next().map(|(_, (_, path))| path);
                break;
            }
            Err(error) => return Err(error),
        };
        if let Some(previous) = examined.last() {
            check_continuity(previous, &segment.segment)?;
        }
        examined.push(segment);
    }
    // Accepted: only now is anything changed on disk.
    remove_leftovers(dir, &listing.leftovers, durability)?;
    let mut recovered_end = RecoveredEnd::New;
    let mut quarantines = listing.quarantines;
    if let Some(path) = displaced {
        quarantine_segment(&path, dir, &mut quarantines, durability)?;
    }
    let recovered = examined
        .into_iter()
        .map(|segment| {
            recovered_end = segment.recovered_end;
            repair(
                segment,
                dir,
                &mut quarantines,
                &mut recovered_end,
                durability,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    durability.metrics().recovered(recovered_end);
    Ok(recovered)
}

/// `Corrupt` unless `next` starts exactly where `previous` ends.
fn check_continuity(
    previous: &ExaminedSegment,
    next: &RecoveredSegment,
) -> Result<(), StorageError> {
    let before = &previous.segment;
    // `examine_segment` checked that this sum fits.
    let expected = offset_after(before.base_offset, u64::from(before.end.record_count));
    if Some(next.base_offset) == expected {
        return Ok(());
    }
    match expected {
        // Records are missing right where a sealed segment's scan met a zero length: the zero
        // is most likely a damaged length (or a lost page) hiding them, so name that spot.
        Some(expected) if previous.zero_length && next.base_offset > expected => {
            Err(StorageError::Corrupt {
                path: before.path.clone(),
                position: u64::from(before.end.position),
                reason: format!(
                    "zero record length at byte {}, but the next segment ({}) starts at offset \
                     {}: records {expected}..{} are missing",
                    before.end.position,
                    next.path.display(),
                    next.base_offset,
                    next.base_offset,
                ),
            })
        }
        _ => {
            let expected = expected.map_or_else(|| "past i64::MAX".to_owned(), |e| e.to_string());
            Err(StorageError::Corrupt {
                path: next.path.clone(),
                position: 0,
                reason: format!(
                    "segment starts at offset {} but the previous segment ({}) ends at offset {expected}",
                    next.base_offset,
                    before.path.display()
                ),
            })
        }
    }
}

/// What a partition directory holds.
#[derive(Debug)]
struct Listing {
    /// The segment files, sorted by base offset.
    segments: Vec<(i64, PathBuf)>,
    /// `*.deleted` files retention left behind; removed once the partition is accepted.
    leftovers: Vec<PathBuf>,
    /// Quarantine files of earlier recoveries, oldest (lowest number) first.
    quarantines: Vec<(u64, PathBuf)>,
}

/// The segment files in `dir`, sorted by base offset, and the leftover `*.deleted` files.
fn list_segments(dir: &Path) -> Result<Listing, StorageError> {
    let mut segments = Vec::new();
    let mut leftovers = Vec::new();
    let mut quarantines = Vec::new();
    let entries = std::fs::read_dir(dir).context(|| format!("listing {}", dir.display()))?;
    for entry in entries {
        let entry = entry.context(|| format!("listing {}", dir.display()))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        let path = entry.path();
        if name.ends_with(DELETED_SUFFIX) {
            leftovers.push(path);
        } else if let Some(n) = quarantine_number(name) {
            quarantines.push((n, path));
        } else {
            match parse_segment_file_name(name) {
                SegmentFileName::Segment(base_offset) => segments.push((base_offset, path)),
                SegmentFileName::OutOfRange => {
                    return Err(StorageError::Corrupt {
                        path,
                        position: 0,
                        reason: format!(
                            "{OFFSETS_OVERFLOW}: the name's base offset is above {}",
                            i64::MAX
                        ),
                    });
                }
                SegmentFileName::Other if name.ends_with(SEGMENT_SUFFIX) => {
                    warn!(path = %path.display(), "ignoring a .log file whose name is not %020d.log");
                }
                SegmentFileName::Other => {}
            }
        }
    }
    segments.sort_unstable_by_key(|(base, _)| *base);
    quarantines.sort_unstable();
    Ok(Listing {
        segments,
        leftovers,
        quarantines,
    })
}

/// The number `n` of a quarantine file's name (`<n>-…​.quarantine`), `None` for other names.
fn quarantine_number(name: &str) -> Option<u64> {
    let rest = name.strip_suffix(QUARANTINE_SUFFIX)?;
    rest.split_once('-')?.0.parse().ok()
}

/// Removes the segments retention retired before the last stop, then fsyncs `dir`.
fn remove_leftovers(
    dir: &Path,
    leftovers: &[PathBuf],
    durability: &Durability,
) -> Result<(), StorageError> {
    for path in leftovers {
        durability
            .io()
            .remove_file(path)
            .context(|| format!("removing retired segment {}", path.display()))?;
        info!(path = %path.display(), "removed a segment retired before the last stop");
    }
    if !leftovers.is_empty() {
        durability.sync_dir(dir)?;
    }
    Ok(())
}

/// True when the segment file at `path` is `presized_bytes` long: a MAPPED segment not yet
/// trimmed by its seal (or one whose records fill it exactly: `docs/storage.md` § Recovery).
fn is_presized(
    path: &Path,
    presized_bytes: u64,
    durability: &Durability,
) -> Result<bool, StorageError> {
    let len = durability
        .io()
        .open(path)
        .and_then(|file| file.metadata())
        .context(|| format!("stat of {}", path.display()))?
        .len();
    Ok(len == presized_bytes)
}

/// Moves the last segment, written while the seal of the one before it had not finished, into
/// a quarantine file in `dir` (a rename, then a directory fsync): by the rule that a FORCED
/// answer waits for the seal, it holds no FORCED record, only WRITTEN and NONE ones, which
/// promise nothing against an OS crash. Kept for an operator, like a quarantined tail.
fn quarantine_segment(
    path: &Path,
    dir: &Path,
    quarantines: &mut Vec<(u64, PathBuf)>,
    durability: &Durability,
) -> Result<(), StorageError> {
    let number = quarantines.last().map_or(1, |(n, _)| n + 1);
    let segment_name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let quarantine = dir.join(format!(
        "{number:06}-{segment_name}-at-0{QUARANTINE_SUFFIX}"
    ));
    durability
        .io()
        .rename(path, &quarantine)
        .context(|| format!("moving {} to {}", path.display(), quarantine.display()))?;
    durability.sync_dir(dir)?;
    warn!(
        segment = %path.display(),
        quarantine = %quarantine.display(),
        "the seal of the segment before the last had not finished (an OS crash or a power loss): \
         that segment was cut where its records end, and the last one, which holds no FORCED \
         record, was moved into a quarantine file"
    );
    quarantines.push((number, quarantine));
    prune_quarantines(dir, quarantines, durability)
}

/// Validates one segment and decides what recovery will do to it, without changing it.
fn examine_segment(
    base_offset: i64,
    path: &Path,
    is_last: bool,
    index_interval_bytes: u32,
    durability: &Durability,
) -> Result<ExaminedSegment, StorageError> {
    let path = path.to_path_buf();
    let file = durability
        .io()
        .open(&path)
        .context(|| format!("opening segment {}", path.display()))?;
    let file_len = file
        .metadata()
        .context(|| format!("stat of {}", path.display()))?
        .len();
    if file_len > MAX_SEGMENT_BYTES {
        return Err(StorageError::Corrupt {
            path,
            position: MAX_SEGMENT_BYTES,
            reason: format!("segment file has {file_len} bytes, more than {MAX_SEGMENT_BYTES}"),
        });
    }
    let outcome = scan_segment(&file, file_len, index_interval_bytes)
        .context(|| format!("reading segment {}", path.display()))?;
    // A log whose offsets cannot be counted is refused as it is.
    if offset_after(base_offset, u64::from(outcome.end.record_count)).is_none() {
        return Err(StorageError::Corrupt {
            path,
            position: 0,
            reason: format!(
                "{OFFSETS_OVERFLOW}: {} records from base offset {base_offset} pass {}",
                outcome.end.record_count,
                i64::MAX
            ),
        });
    }
    let end = u64::from(outcome.end.position);
    let zero_length = outcome.stop == ScanStop::ZeroLength;
    let discarded_bytes = file_len - end;
    let repair = match outcome.stop {
        ScanStop::Clean => Repair::Keep,
        ScanStop::ZeroLength if is_last => {
            // Only the log level depends on what follows; the tail is cut either way.
            let peek_end = file_len.min(end.saturating_add(TAIL_PEEK_BYTES));
            match first_nonzero_byte(&file, end, peek_end)
                .context(|| format!("reading segment {}", path.display()))?
            {
                None => Repair::ClearZeroTail,
                Some(at) => Repair::CutTornTail {
                    reason: format!(
                        "zero record length at byte {end} followed by non-zero bytes (byte {at}): \
                         a record whose length was not yet written, or a damaged length"
                    ),
                },
            }
        }
        ScanStop::ZeroLength => {
            // A sealed segment: zeros behind its records are a trim that was not yet durable;
            // anything else means the zero replaced the length of a record that is still there.
            match first_nonzero_byte(&file, end, file_len)
                .context(|| format!("reading segment {}", path.display()))?
            {
                None => Repair::ClearZeroTail,
                Some(at) => {
                    return Err(StorageError::Corrupt {
                        path,
                        position: end,
                        reason: format!(
                            "zero record length at byte {end} in a segment that is not the \
                             last, with non-zero bytes after it (byte {at})"
                        ),
                    });
                }
            }
        }
        ScanStop::Torn { reason } if is_last => Repair::CutTornTail { reason },
        ScanStop::DamagedBeforeValid { reason } if is_last => Repair::Quarantine { reason },
        ScanStop::Torn { reason } | ScanStop::DamagedBeforeValid { reason } => {
            return Err(StorageError::Corrupt {
                path,
                position: end,
                reason: format!("{reason}, in a segment that is not the last"),
            });
        }
        ScanStop::Corrupt { position, reason } => {
            return Err(StorageError::Corrupt {
                path,
                position,
                reason,
            });
        }
    };
    Ok(ExaminedSegment {
        segment: RecoveredSegment {
            base_offset,
            path,
            file,
            end: outcome.end,
            index: outcome.index,
        },
        file_len,
        zero_length,
        recovered_end: match &repair {
            Repair::Keep => RecoveredEnd::Clean,
            Repair::ClearZeroTail => RecoveredEnd::ZeroLength {
                nonzero_after: false,
            },
            Repair::CutTornTail { .. } if zero_length => RecoveredEnd::ZeroLength {
                nonzero_after: true,
            },
            Repair::CutTornTail { .. } => RecoveredEnd::Torn { discarded_bytes },
            // The count is known once the tail is copied (`repair`).
            Repair::Quarantine { .. } => RecoveredEnd::Quarantined {
                quarantined_bytes: 0,
            },
        },
        repair,
    })
}

/// Applies the repair recovery decided on for one segment of an accepted partition in `dir`
/// (`quarantines`: the partition's quarantine files, oldest first, kept up to date).
fn repair(
    examined: ExaminedSegment,
    dir: &Path,
    quarantines: &mut Vec<(u64, PathBuf)>,
    recovered_end: &mut RecoveredEnd,
    durability: &Durability,
) -> Result<RecoveredSegment, StorageError> {
    let ExaminedSegment {
        segment,
        file_len,
        repair,
        ..
    } = examined;
    let end = u64::from(segment.end.position);
    match repair {
        Repair::Keep => {}
        Repair::ClearZeroTail => {
            // A MAPPED segment that was not closed cleanly, or not trimmed durably when sealed.
            cut_tail(&segment.file, &segment.path, end, durability)?;
            info!(
                path = %segment.path.display(),
                end,
                file_len,
                cleared_bytes = file_len - end,
                "cleared the unwritten tail (zeros) of a segment after an unclean stop"
            );
        }
        Repair::CutTornTail { reason } => {
            cut_tail(&segment.file, &segment.path, end, durability)?;
            warn!(
                path = %segment.path.display(),
                position = end,
                discarded_bytes = file_len - end,
                %reason,
                "discarded a torn write at the end of the log"
            );
        }
        Repair::Quarantine { reason } => {
            let (quarantine, bytes) =
                quarantine_tail(&segment, dir, file_len, quarantines, durability)?;
            *recovered_end = RecoveredEnd::Quarantined {
                quarantined_bytes: bytes,
            };
            cut_tail(&segment.file, &segment.path, end, durability)?;
            warn!(
                path = %segment.path.display(),
                position = end,
                discarded_bytes = file_len - end,
                quarantined_bytes = bytes,
                quarantine = %quarantine.display(),
                %reason,
                "damage before a valid record at the end of the log (a power loss with \
                 out-of-order write-back): cut there; the tail is kept in the quarantine file"
            );
            prune_quarantines(dir, quarantines, durability)?;
        }
    }
    Ok(segment)
}

/// Copies the tail of `segment` from its end (the damaged record) to its last non-zero byte
/// into a new quarantine file in `dir`, fsyncs it and the directory. Returns the file and the
/// bytes copied.
fn quarantine_tail(
    segment: &RecoveredSegment,
    dir: &Path,
    file_len: u64,
    quarantines: &mut Vec<(u64, PathBuf)>,
    durability: &Durability,
) -> Result<(PathBuf, u64), StorageError> {
    let from = u64::from(segment.end.position);
    let reading = || format!("reading segment {}", segment.path.display());
    let to = last_nonzero_byte(&segment.file, from, file_len)
        .context(reading)?
        .map_or(from, |at| at + 1);
    let number = quarantines.last().map_or(1, |(n, _)| n + 1);
    let segment_name = segment
        .path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let path = dir.join(format!(
        "{number:06}-{segment_name}-at-{from}{QUARANTINE_SUFFIX}"
    ));
    let io = durability.io();
    let writing = || format!("writing quarantine file {}", path.display());
    let file = io.create_new(&path).context(writing)?;
    let mut buf = vec![0u8; (to - from).min(RECOVERY_CHUNK_BYTES as u64) as usize];
    let mut position = from;
    while position < to {
        let chunk = &mut buf[..(to - position).min(RECOVERY_CHUNK_BYTES as u64) as usize];
        segment
            .file
            .read_exact_at(chunk, position)
            .context(reading)?;
        io.write_all_at(&file, chunk, position - from)
            .context(writing)?;
        position += chunk.len() as u64;
    }
    durability.sync_all(&file, &path)?;
    durability.sync_dir(dir)?;
    quarantines.push((number, path.clone()));
    Ok((path, to - from))
}

/// Removes the oldest quarantine files beyond [`MAX_QUARANTINE_FILES`], then fsyncs `dir`.
fn prune_quarantines(
    dir: &Path,
    quarantines: &mut Vec<(u64, PathBuf)>,
    durability: &Durability,
) -> Result<(), StorageError> {
    if quarantines.len() <= MAX_QUARANTINE_FILES {
        return Ok(());
    }
    let excess = quarantines.len() - MAX_QUARANTINE_FILES;
    for (_, path) in quarantines.drain(..excess) {
        durability
            .io()
            .remove_file(&path)
            .context(|| format!("removing quarantine file {}", path.display()))?;
        warn!(
            path = %path.display(),
            kept = MAX_QUARANTINE_FILES,
            "removed the oldest quarantine file: at most this many are kept per partition"
        );
    }
    durability.sync_dir(dir)
}

/// Position of the last byte in `from..to` of `file` that is not zero. Reads one bounded chunk
/// at a time.
fn last_nonzero_byte(file: &File, from: u64, to: u64) -> std::io::Result<Option<u64>> {
    let mut buf = vec![0u8; (to.saturating_sub(from)).min(RECOVERY_CHUNK_BYTES as u64) as usize];
    let mut position = from;
    let mut last = None;
    while position < to {
        let chunk = &mut buf[..(to - position).min(RECOVERY_CHUNK_BYTES as u64) as usize];
        file.read_exact_at(chunk, position)?;
        if let Some(at) = chunk.iter().rposition(|&b| b != 0) {
            last = Some(position + at as u64);
        }
        position += chunk.len() as u64;
    }
    Ok(last)
}

/// Position of the first byte in `from..to` of `file` that is not zero. Reads one bounded
/// chunk at a time.
fn first_nonzero_byte(file: &File, from: u64, to: u64) -> std::io::Result<Option<u64>> {
    let mut buf = vec![0u8; (to.saturating_sub(from)).min(RECOVERY_CHUNK_BYTES as u64) as usize];
    let mut position = from;
    while position < to {
        let chunk = &mut buf[..(to - position).min(RECOVERY_CHUNK_BYTES as u64) as usize];
        file.read_exact_at(chunk, position)?;
        if let Some(at) = chunk.iter().position(|&b| b != 0) {
            return Ok(Some(position + at as u64));
        }
        position += chunk.len() as u64;
    }
    Ok(None)
}

/// Truncates `file` to `len` bytes and fsyncs the truncation.
fn cut_tail(
    file: &File,
    path: &Path,
    len: u64,
    durability: &Durability,
) -> Result<(), StorageError> {
    durability
        .io()
        .set_len(file, len)
        .context(|| format!("truncating {} to {len} bytes", path.display()))?;
    durability.sync_all(file, path)
}

/// Validates the records of one segment file of `file_len` bytes from its start, building its
/// sparse index. Reads in chunks; never allocates more than one chunk or one record.
pub(crate) fn scan_segment(
    file: &File,
    file_len: u64,
    index_interval_bytes: u32,
) -> std::io::Result<ScanOutcome> {
    let mut index = SparseIndex::new(index_interval_bytes);
    let mut record_count = 0u32;
    let mut position = 0u64;
    let mut need = 0usize;
    let mut buf = Vec::new();
    let stop = loop {
        let remaining = file_len - position;
        if remaining == 0 {
            break ScanStop::Clean;
        }
        let want = (RECOVERY_CHUNK_BYTES.max(need) as u64).min(remaining) as usize;
        buf.resize(want, 0);
        file.read_exact_at(&mut buf, position)?;
        let mut scanner = RecordScanner::new(&buf);
        let mut mismatch = None;
        for record in scanner.by_ref() {
            let at = position + record.position as u64;
            if !record.crc_matches() {
                mismatch = Some((at, at + record.encoded_len() as u64));
                break;
            }
            index.on_record(record_count, at as u32);
            record_count += 1;
        }
        if let Some((at, next)) = mismatch {
            position = at;
            break after_crc_mismatch(file, file_len, at, next)?;
        }
        match scanner.end().unwrap_or(ScanEnd::Clean) {
            ScanEnd::Clean => {
                position += buf.len() as u64;
                need = 0;
            }
            ScanEnd::ZeroLength { position: p } => {
                position += p as u64;
                break ScanStop::ZeroLength;
            }
            ScanEnd::NegativeLength {
                position: p,
                length,
            } => {
                position += p as u64;
                break ScanStop::Corrupt {
                    position,
                    reason: format!("negative record length {length}"),
                };
            }
            ScanEnd::Partial {
                position: p,
                declared_len,
                ..
            } => {
                position += p as u64;
                let record_len = declared_len.map(|len| (RECORD_HEADER_BYTES + len) as u64);
                match record_len {
                    Some(len) if len > MAX_RECOVERY_RECORD_BYTES as u64 => {
                        break ScanStop::Torn {
                            reason: format!(
                                "record at byte {position} declares {len} bytes, more than the \
                                 largest record ({MAX_RECOVERY_RECORD_BYTES} bytes)"
                            ),
                        };
                    }
                    Some(len) if position + len > file_len => {
                        break ScanStop::Torn {
                            reason: format!(
                                "record at byte {position} declares {len} bytes but the file ends at byte {file_len}"
                            ),
                        };
                    }
                    // Fewer bytes left than a length field. All zeros is unwritten space, the
                    // same as a zero length: a MAPPED segment sealed with less than a header of
                    // room left, whose trim a power loss undid, ends like this.
                    None if position + 4 > file_len && buf[p..].iter().all(|&b| b == 0) => {
                        break ScanStop::ZeroLength;
                    }
                    None if position + 4 > file_len => {
                        break ScanStop::Torn {
                            reason: format!(
                                "record header at byte {position} is cut by the end of the file"
                            ),
                        };
                    }
                    // The record continues past this chunk: read again from its start.
                    Some(len) => need = len as usize,
                    None => need = RECORD_HEADER_BYTES,
                }
            }
        }
    };
    Ok(ScanOutcome {
        end: SegmentEnd {
            record_count,
            position: position as u32,
        },
        index,
        stop,
    })
}

/// A whole record at `at` failed its CRC. If a valid record starts right after it (at `next`),
/// committed data was damaged; otherwise it is the torn last write.
fn after_crc_mismatch(file: &File, file_len: u64, at: u64, next: u64) -> std::io::Result<ScanStop> {
    Ok(if valid_record_at(file, file_len, next)? {
        ScanStop::DamagedBeforeValid {
            reason: format!(
                "CRC mismatch in the record at byte {at}, and a valid record follows at byte {next}"
            ),
        }
    } else {
        ScanStop::Torn {
            reason: format!("CRC mismatch in the last record (byte {at})"),
        }
    })
}

/// True when a whole record with a matching CRC starts at `position`.
fn valid_record_at(file: &File, file_len: u64, position: u64) -> std::io::Result<bool> {
    let header_end = position + RECORD_HEADER_BYTES as u64;
    if header_end > file_len {
        return Ok(false);
    }
    let mut header = [0u8; RECORD_HEADER_BYTES];
    file.read_exact_at(&mut header, position)?;
    let len = i32::from_be_bytes([header[0], header[1], header[2], header[3]]);
    if len <= 0 || len as usize > MAX_RECORD_PAYLOAD_BYTES || header_end + len as u64 > file_len {
        return Ok(false);
    }
    let stored_crc = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
    let mut payload = vec![0u8; len as usize];
    file.read_exact_at(&mut payload, header_end)?;
    Ok(crc32c(&payload) == stored_crc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use booblik_protocol::encode_record;
    use std::io::Write;

    fn file_with(bytes: &[u8]) -> File {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        file
    }

    fn scan(bytes: &[u8]) -> ScanOutcome {
        scan_segment(&file_with(bytes), bytes.len() as u64, 4096).unwrap()
    }

    fn records(payloads: &[&[u8]]) -> Vec<u8> {
        let mut buf = Vec::new();
        for payload in payloads {
            encode_record(payload, &mut buf);
        }
        buf
    }

    #[test]
    fn whole_records_to_the_end_of_the_file_are_a_clean_end() {
        let outcome = scan(&records(&[b"a", b"bb", b"ccc"]));
        assert_eq!(outcome.stop, ScanStop::Clean);
        assert_eq!(outcome.end.record_count, 3);
        assert_eq!(outcome.end.position, 9 + 10 + 11);
    }

    #[test]
    fn a_zero_length_ends_the_segment() {
        let mut bytes = records(&[b"a"]);
        bytes.extend_from_slice(&[0; 100]);
        let outcome = scan(&bytes);
        assert_eq!(outcome.stop, ScanStop::ZeroLength);
        assert_eq!(outcome.end.position, 9);
    }

    #[test]
    fn fewer_zero_bytes_than_a_length_field_end_the_segment_like_a_zero_length() {
        for zeros in 1..4 {
            let mut bytes = records(&[b"a"]);
            bytes.extend(std::iter::repeat_n(0, zeros));
            let outcome = scan(&bytes);
            assert_eq!(outcome.stop, ScanStop::ZeroLength, "{zeros} zero bytes");
            assert_eq!(outcome.end.position, 9);
        }
        // Anything but zeros there is a cut header.
        let mut bytes = records(&[b"a"]);
        bytes.extend_from_slice(&[0, 1]);
        assert!(matches!(scan(&bytes).stop, ScanStop::Torn { .. }));
    }

    #[test]
    fn a_record_running_past_the_end_of_the_file_is_torn() {
        let long = [b'b'; 300];
        let bytes = records(&[b"a", &long]);
        let outcome = scan(&bytes[..bytes.len() - 1]);
        assert!(matches!(outcome.stop, ScanStop::Torn { .. }));
        assert_eq!(outcome.end.record_count, 1);
        // A header cut after three bytes (00 00 01 of the length 300): not zeros, so torn. (A cut
        // that leaves only zero bytes cannot be told from unwritten space, and ends the segment
        // like a zero length: the same cut, and no record is lost either way.)
        let outcome = scan(&bytes[..12]);
        assert!(matches!(outcome.stop, ScanStop::Torn { .. }));
    }

    #[test]
    fn a_crc_mismatch_in_the_last_record_is_torn_but_in_the_middle_is_corrupt() {
        let mut bytes = records(&[b"a", b"bb", b"ccc"]);
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        assert!(matches!(scan(&bytes).stop, ScanStop::Torn { .. }));
        let mut bytes = records(&[b"a", b"bb", b"ccc"]);
        bytes[9 + 8] ^= 0xff;
        let outcome = scan(&bytes);
        assert_eq!(outcome.end.position, 9);
        assert_eq!(
            outcome.stop,
            ScanStop::DamagedBeforeValid {
                reason:
                    "CRC mismatch in the record at byte 9, and a valid record follows at byte 19"
                        .into()
            }
        );
    }

    #[test]
    fn damage_before_a_valid_record_in_the_last_segment_is_quarantined_then_cut() {
        let mut last = records(&[b"a", b"bb", b"ccc"]);
        last[9 + 8] ^= 0xff;
        let mut tail = last[9..].to_vec();
        // A pre-sized MAPPED file: zeros after the records are not copied.
        last.extend_from_slice(&[0; 100]);
        let dir = partition_dir(&[(0, &last)]);
        let durability = durability();
        let recovered = recover_partition(dir.path(), 4096, PRESIZED_BYTES, &durability).unwrap();
        assert_eq!(recovered[0].end.record_count, 1);
        assert_eq!(std::fs::metadata(&recovered[0].path).unwrap().len(), 9);
        let quarantine = dir
            .path()
            .join(format!("{:06}-{:020}.log-at-9.quarantine", 1, 0));
        assert_eq!(std::fs::read(&quarantine).unwrap(), tail);
        assert_eq!(
            durability.metrics().recovered_end(),
            RecoveredEnd::Quarantined {
                quarantined_bytes: tail.len() as u64
            }
        );
        // The quarantine file is not a segment: the partition reopens as it is, and the next
        // quarantine gets the next number; beyond the limit the oldest go.
        for n in 2..=MAX_QUARANTINE_FILES as u64 + 2 {
            let mut bytes = std::fs::read(&recovered[0].path).unwrap();
            let damaged = bytes.len();
            bytes.extend(records(&[b"xx", b"y"]));
            bytes[damaged + 8] ^= 0xff;
            std::fs::write(&recovered[0].path, &bytes).unwrap();
            recover_partition(dir.path(), 4096, PRESIZED_BYTES, &durability).unwrap();
            tail = bytes[damaged..].to_vec();
            let newest = dir
                .path()
                .join(format!("{n:06}-{:020}.log-at-{damaged}.quarantine", 0));
            assert_eq!(std::fs::read(&newest).unwrap(), tail);
        }
        let kept: Vec<u64> = files(dir.path())
            .iter()
            .filter_map(|(path, _)| quarantine_number(path.file_name()?.to_str()?))
            .collect();
        assert_eq!(
            kept,
            (3..=MAX_QUARANTINE_FILES as u64 + 2).collect::<Vec<_>>()
        );
    }

    #[test]
    fn damage_before_a_valid_record_in_a_sealed_segment_is_corrupt_and_nothing_changes() {
        let mut first = records(&[b"a", b"bb", b"ccc"]);
        first[9 + 8] ^= 0xff;
        let dir = partition_dir(&[(0, &first), (3, &records(&[b"d"]))]);
        let before = files(dir.path());
        match recover(dir.path()) {
            Err(StorageError::Corrupt {
                position, reason, ..
            }) => {
                assert_eq!(position, 9);
                assert!(reason.contains("not the last"), "{reason}");
            }
            other => panic!("expected Corrupt, got {other:?}"),
        }
        assert_eq!(files(dir.path()), before);
    }

    #[test]
    fn a_length_beyond_the_largest_record_is_torn_without_reading_that_far() {
        // A damaged length declaring 16 MiB, with that many bytes behind it in the file.
        let mut bytes = records(&[b"a"]);
        bytes.extend_from_slice(&(16 * 1024 * 1024_i32).to_be_bytes());
        bytes.resize(bytes.len() + 16 * 1024 * 1024 + 8, 0x5A);
        let outcome = scan(&bytes);
        assert_eq!(outcome.end.record_count, 1);
        match outcome.stop {
            ScanStop::Torn { reason } => {
                assert!(reason.contains("more than the largest record"), "{reason}");
            }
            other => panic!("expected Torn, got {other:?}"),
        }
        // In a segment that is not the last, the same is corruption, as any torn write there.
        let dir = partition_dir(&[(0, &bytes), (1, &records(&[b"b"]))]);
        assert!(matches!(
            recover(dir.path()),
            Err(StorageError::Corrupt { .. })
        ));
    }

    #[test]
    fn records_larger_than_a_read_chunk_are_validated_whole() {
        let big = vec![7u8; RECOVERY_CHUNK_BYTES + 10];
        let bytes = records(&[b"x", &big, b"y"]);
        let outcome = scan(&bytes);
        assert_eq!(outcome.stop, ScanStop::Clean);
        assert_eq!(outcome.end.record_count, 3);
    }

    fn durability() -> Durability {
        Durability::new(
            std::sync::Arc::new(crate::storage::io::RealIo),
            std::sync::Arc::new(crate::storage::metrics::PartitionMetrics::new("t", 0)),
        )
    }

    /// The pre-sized length of a MAPPED segment in these tests' configuration.
    const PRESIZED_BYTES: u64 = 64 * 1024;

    /// `bytes` followed by zeros up to [`PRESIZED_BYTES`]: a MAPPED segment not yet trimmed.
    fn presized(mut bytes: Vec<u8>) -> Vec<u8> {
        bytes.resize(PRESIZED_BYTES as usize, 0);
        bytes
    }

    /// Three records, a page that never reached the disk (zeros), then one more record: what a
    /// power loss leaves of a segment written back out of order.
    fn torn_by_a_lost_page() -> Vec<u8> {
        let mut bytes = records(&[b"a", b"bb", b"ccc"]);
        bytes.extend(std::iter::repeat_n(0, 4096));
        bytes.extend(records(&[b"dddd"]));
        bytes
    }

    /// Recovery of `dir` refuses as corrupt and leaves every file as it was.
    fn assert_refused_and_unchanged(dir: &Path) {
        let before = files(dir);
        assert!(matches!(recover(dir), Err(StorageError::Corrupt { .. })));
        assert_eq!(files(dir), before);
    }

    /// The names of the files in `dir`.
    fn names(dir: &Path) -> Vec<String> {
        files(dir)
            .iter()
            .map(|(path, _)| path.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_torn_untrimmed_segment_before_the_last_ends_the_log_and_the_last_goes_to_quarantine() {
        // A power loss during the seal: a page in the middle of the full segment never reached
        // the disk (zeros), the one after it did.
        let first = torn_by_a_lost_page();
        let second = records(&[b"e"]);
        let dir = partition_dir(&[(0, &presized(first)), (4, &second)]);
        let recovered = recover(dir.path()).unwrap();
        assert_eq!(recovered.len(), 1);
        assert_eq!(recovered[0].end.record_count, 3);
        assert_eq!(
            names(dir.path()),
            vec![
                format!("{:020}.log", 0),
                format!("000001-{:020}.log-at-0.quarantine", 4),
            ]
        );
        assert_eq!(
            std::fs::metadata(&recovered[0].path).unwrap().len(),
            u64::from(recovered[0].end.position),
            "cut where its records end"
        );
        let quarantined = dir
            .path()
            .join(format!("000001-{:020}.log-at-0.quarantine", 4));
        assert_eq!(std::fs::read(quarantined).unwrap(), second);
    }

    #[test]
    fn an_untrimmed_segment_before_the_last_that_lost_its_last_records_ends_the_log() {
        // A power loss during the seal kept the first two records of three; the last segment
        // starts at offset 3.
        let first = presized(records(&[b"a", b"bb"]));
        let dir = partition_dir(&[(0, &first), (3, &records(&[b"d"]))]);
        let recovered = recover(dir.path()).unwrap();
        assert_eq!(recovered.len(), 1);
        assert_eq!(recovered[0].end.record_count, 2);
        assert_eq!(
            names(dir.path()),
            vec![
                format!("{:020}.log", 0),
                format!("000001-{:020}.log-at-0.quarantine", 3),
            ]
        );
    }

    #[test]
    fn an_untrimmed_segment_before_the_last_that_overlaps_the_last_is_corrupt_and_nothing_changes()
    {
        // Two records and a zero tail, but the last segment starts at offset 1, inside them: no
        // power loss makes that, so it is refused rather than taken for an unfinished seal.
        let first = presized(records(&[b"a", b"bb"]));
        let dir = partition_dir(&[(0, &first), (1, &records(&[b"d"]))]);
        assert_refused_and_unchanged(dir.path());
    }

    #[test]
    fn a_whole_untrimmed_segment_before_the_last_keeps_the_last() {
        // A process killed during the seal: the page cache kept everything.
        let first = presized(records(&[b"a", b"bb"]));
        let dir = partition_dir(&[(0, &first), (2, &records(&[b"c"]))]);
        let recovered = recover(dir.path()).unwrap();
        assert_eq!(recovered.len(), 2);
        assert_eq!(recovered[0].end.record_count, 2);
        assert_eq!(recovered[1].end.record_count, 1);
    }

    #[test]
    fn a_torn_segment_before_the_last_that_was_trimmed_is_corrupt_and_nothing_changes() {
        // Its seal finished (the file is shorter than pre-sized): damage there is corruption.
        let first = torn_by_a_lost_page();
        let dir = partition_dir(&[(0, &first), (4, &records(&[b"e"]))]);
        assert_refused_and_unchanged(dir.path());
    }

    #[test]
    fn a_torn_untrimmed_segment_two_before_the_last_is_corrupt_and_nothing_changes() {
        // The roll after it waited for its seal, so that seal finished: damage is corruption.
        let first = torn_by_a_lost_page();
        let dir = partition_dir(&[
            (0, &presized(first)),
            (4, &records(&[b"e"])),
            (5, &records(&[b"f"])),
        ]);
        assert_refused_and_unchanged(dir.path());
    }

    /// A partition directory holding one segment file per `(base offset, bytes)`.
    fn partition_dir(segments: &[(i64, &[u8])]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (base_offset, bytes) in segments {
            std::fs::write(dir.path().join(format!("{base_offset:020}.log")), bytes).unwrap();
        }
        dir
    }

    fn recover(dir: &Path) -> Result<Vec<RecoveredSegment>, StorageError> {
        recover_partition(dir, 4096, PRESIZED_BYTES, &durability())
    }

    fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let path = e.unwrap().path();
                let bytes = std::fs::read(&path).unwrap();
                (path, bytes)
            })
            .collect();
        files.sort();
        files
    }

    /// A sealed segment of two records followed by `zeros` zero bytes, the next segment starting
    /// at offset 2: recovery accepts both and trims the zeros.
    fn a_zero_tail_of_a_sealed_segment_is_accepted_and_trimmed(zeros: usize) {
        let mut first = records(&[b"a", b"bb"]);
        first.extend(std::iter::repeat_n(0, zeros));
        let second = records(&[b"c"]);
        let dir = partition_dir(&[(0, &first), (2, &second)]);
        let recovered = recover(dir.path()).unwrap();
        assert_eq!(recovered.len(), 2);
        assert_eq!(recovered[0].end.record_count, 2);
        assert_eq!(std::fs::metadata(&recovered[0].path).unwrap().len(), 19);
    }

    #[test]
    fn a_sealed_segment_with_a_zero_tail_and_the_right_count_is_accepted_and_trimmed() {
        // A MAPPED roll whose trim was not durable.
        a_zero_tail_of_a_sealed_segment_is_accepted_and_trimmed(200);
    }

    #[test]
    fn a_sealed_segment_with_less_than_a_header_of_zero_tail_is_accepted_and_trimmed() {
        // A MAPPED segment sealed with 3 bytes of room left, whose trim a power loss undid.
        a_zero_tail_of_a_sealed_segment_is_accepted_and_trimmed(3);
    }

    #[test]
    fn a_zero_length_with_bytes_after_it_in_a_sealed_segment_is_corrupt_and_nothing_changes() {
        let mut first = records(&[b"a", b"bb", b"ccc"]);
        first[9..13].copy_from_slice(&[0; 4]);
        let second = records(&[b"d"]);
        let dir = partition_dir(&[(0, &first), (3, &second)]);
        // A retired segment's leftover stays too: it is removed only from an accepted partition.
        std::fs::write(dir.path().join("00000000000000000000.log.deleted"), b"x").unwrap();
        let before = files(dir.path());
        match recover(dir.path()) {
            Err(StorageError::Corrupt {
                position, reason, ..
            }) => {
                assert_eq!(position, 9);
                assert!(reason.contains("zero record length at byte 9"), "{reason}");
            }
            other => panic!("expected Corrupt, got {other:?}"),
        }
        assert_eq!(files(dir.path()), before);
    }

    #[test]
    fn a_zeroed_tail_hiding_records_of_a_sealed_segment_is_corrupt_and_nothing_changes() {
        // A lost page: the sealed segment's last two records read as zeros, yet the next
        // segment starts at offset 3.
        let mut first = records(&[b"a", b"bb", b"ccc"]);
        let len = first.len();
        first[9..len].fill(0);
        let second = records(&[b"d"]);
        let dir = partition_dir(&[(0, &first), (3, &second)]);
        let before = files(dir.path());
        match recover(dir.path()) {
            Err(StorageError::Corrupt {
                path,
                position,
                reason,
            }) => {
                assert_eq!(path, dir.path().join("00000000000000000000.log"));
                assert_eq!(position, 9);
                assert!(reason.contains("records 1..3 are missing"), "{reason}");
            }
            other => panic!("expected Corrupt, got {other:?}"),
        }
        assert_eq!(files(dir.path()), before);
    }

    #[test]
    fn a_torn_last_segment_is_not_cut_when_an_earlier_segment_refuses() {
        let first = records(&[b"a", b"bb"]);
        let mut last = records(&[b"c", b"dd"]);
        last.truncate(last.len() - 1);
        // A gap: the last segment should start at offset 2.
        let dir = partition_dir(&[(0, &first), (5, &last)]);
        assert_refused_and_unchanged(dir.path());
    }

    #[test]
    fn a_zero_length_in_the_last_segment_cuts_whatever_follows_it() {
        let mut last = records(&[b"a", b"bb", b"ccc"]);
        last[9..13].copy_from_slice(&[0; 4]);
        let dir = partition_dir(&[(0, &last)]);
        let recovered = recover(dir.path()).unwrap();
        assert_eq!(recovered[0].end.record_count, 1);
        assert_eq!(std::fs::metadata(&recovered[0].path).unwrap().len(), 9);
    }

    #[test]
    fn a_negative_length_is_corruption() {
        let mut bytes = records(&[b"a", b"b"]);
        bytes[9] = 0x80;
        assert!(matches!(
            scan(&bytes).stop,
            ScanStop::Corrupt { position: 9, .. }
        ));
    }
}
