//! The bytes of one offset file, and why a file that is not exactly those bytes is refused.
//!
//! An offset file is tiny, but a wrong number in it is expensive: a truncated `12` read as `1`
//! silently replays eleven records, and a zeroed file read as `0` replays the whole log. So the
//! file is binary with a fixed header, a length that is checked exactly, and a CRC-32C over
//! everything before it. It also names the key it belongs to, so a file copied or renamed under
//! another key (or two names colliding on a case-insensitive file system) is an error too.
//!
//! ```text
//! byte  size  field
//!    0     4  magic              "BOFS" (booblik offset store)
//!    4     2  format version     u16 big-endian, currently 1
//!    6     2  consumer length C  u16 big-endian, bytes of UTF-8
//!    8     2  topic length T     u16 big-endian, bytes of UTF-8
//!   10     4  partition          i32 big-endian
//!   14     8  offset             i64 big-endian, >= 0
//!   22     C  consumer name      UTF-8, as given (not escaped)
//! 22+C     T  topic name         UTF-8, as given
//! 22+C+T   4  checksum           CRC-32C (Castagnoli) of bytes [0, 22+C+T), u32 big-endian
//! ```
//!
//! A valid file is exactly `26 + C + T` bytes. Every truncation is caught: either fewer than the
//! 22 header bytes remain, or the header survives and promises more bytes than there are. Every
//! flipped byte is caught: CRC-32C detects all bursts of up to 32 bits, and a flip in a length
//! field is already caught as a length mismatch.

use crate::key::OffsetKey;

/// The first four bytes of every offset file.
pub const MAGIC: [u8; 4] = *b"BOFS";

/// The layout version this code writes and reads.
pub const FORMAT_VERSION: u16 = 1;

/// Bytes before the two names: magic, version, two lengths, partition, offset.
pub const HEADER_BYTES: usize = 22;

/// Bytes of the trailing checksum.
pub const CHECKSUM_BYTES: usize = 4;

/// Largest valid file: both names at their longest raw length. A raw name is never longer than
/// its encoding, which [`OffsetKey`] limits to
/// [`MAX_ENCODED_NAME_BYTES`](crate::name_encoding::MAX_ENCODED_NAME_BYTES). Reads stop here, so a
/// huge foreign file is refused without being loaded.
pub const MAX_FILE_BYTES: usize =
    HEADER_BYTES + 2 * crate::name_encoding::MAX_ENCODED_NAME_BYTES + CHECKSUM_BYTES;

/// What is wrong with the bytes of an offset file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// Fewer bytes than a header, e.g. a file cut short.
    #[error("only {len} bytes, shorter than the {HEADER_BYTES}-byte header (truncated?)")]
    TooShort {
        /// Bytes in the file.
        len: usize,
    },
    /// More bytes than any valid file has.
    #[error("more than {MAX_FILE_BYTES} bytes, longer than any offset file")]
    TooLong,
    /// The file does not start with [`MAGIC`]: not an offset file, or its start is damaged.
    #[error("bad magic {found:02X?}, expected {MAGIC:02X?} (\"BOFS\")")]
    BadMagic {
        /// The first four bytes.
        found: [u8; 4],
    },
    /// A format version this code does not know.
    #[error("format version {found}, this build reads only version {FORMAT_VERSION}")]
    UnsupportedVersion {
        /// The version in the file.
        found: u16,
    },
    /// The header's lengths promise a different size than the file has.
    #[error(
        "the header promises {expected} bytes but the file has {actual} (truncated or damaged)"
    )]
    LengthMismatch {
        /// Size the header implies.
        expected: usize,
        /// Size of the file.
        actual: usize,
    },
    /// The checksum does not match the bytes.
    #[error("checksum mismatch: stored {stored:#010X}, computed {computed:#010X}")]
    ChecksumMismatch {
        /// The checksum in the file.
        stored: u32,
        /// The checksum of the bytes before it.
        computed: u32,
    },
    /// A name is not UTF-8 although the checksum matched: written by something else.
    #[error("a stored name is not UTF-8")]
    NameNotUtf8,
    /// The file is intact but holds another key's position.
    #[error("the file holds the position of {found}, not of {expected}")]
    WrongKey {
        /// The key the file was read for.
        expected: Box<OffsetKey>,
        /// The key stored in the file.
        found: Box<OffsetKey>,
    },
    /// The stored key is not a valid key (e.g. an empty name) although the checksum matched.
    #[error("the stored key is invalid")]
    InvalidStoredKey,
    /// The stored offset is negative although the checksum matched.
    #[error("the stored offset {offset} is negative")]
    NegativeOffset {
        /// The stored offset.
        offset: i64,
    },
}

/// The exact bytes of the file that records `offset` for `key`.
pub fn encode(key: &OffsetKey, offset: i64) -> Vec<u8> {
    let consumer = key.consumer().as_bytes();
    let topic = key.topic().as_bytes();
    let mut bytes =
        Vec::with_capacity(HEADER_BYTES + consumer.len() + topic.len() + CHECKSUM_BYTES);
    bytes.extend_from_slice(&MAGIC);
    bytes.extend_from_slice(&FORMAT_VERSION.to_be_bytes());
    // OffsetKey limits each name to MAX_ENCODED_NAME_BYTES (255), far below u16::MAX.
    bytes.extend_from_slice(&(consumer.len() as u16).to_be_bytes());
    bytes.extend_from_slice(&(topic.len() as u16).to_be_bytes());
    bytes.extend_from_slice(&key.partition().to_be_bytes());
    bytes.extend_from_slice(&offset.to_be_bytes());
    bytes.extend_from_slice(consumer);
    bytes.extend_from_slice(topic);
    let checksum = crc32c::crc32c(&bytes);
    bytes.extend_from_slice(&checksum.to_be_bytes());
    bytes
}

/// Reads the offset for `expected` from a whole file's bytes, or says what is wrong with them.
pub fn decode(bytes: &[u8], expected: &OffsetKey) -> Result<i64, FormatError> {
    if bytes.len() > MAX_FILE_BYTES {
        return Err(FormatError::TooLong);
    }
    if bytes.len() < HEADER_BYTES {
        return Err(FormatError::TooShort { len: bytes.len() });
    }
    let magic: [u8; 4] = array_at(bytes, 0);
    if magic != MAGIC {
        return Err(FormatError::BadMagic { found: magic });
    }
    let version = u16::from_be_bytes(array_at(bytes, 4));
    if version != FORMAT_VERSION {
        return Err(FormatError::UnsupportedVersion { found: version });
    }
    let consumer_len = usize::from(u16::from_be_bytes(array_at(bytes, 6)));
    let topic_len = usize::from(u16::from_be_bytes(array_at(bytes, 8)));
    let checked_len = HEADER_BYTES + consumer_len + topic_len;
    let expected_len = checked_len + CHECKSUM_BYTES;
    if bytes.len() != expected_len {
        return Err(FormatError::LengthMismatch {
            expected: expected_len,
            actual: bytes.len(),
        });
    }
    let stored = u32::from_be_bytes(array_at(bytes, checked_len));
    let computed = crc32c::crc32c(&bytes[..checked_len]);
    if stored != computed {
        return Err(FormatError::ChecksumMismatch { stored, computed });
    }

    let partition = i32::from_be_bytes(array_at(bytes, 10));
    let offset = i64::from_be_bytes(array_at(bytes, 14));
    let consumer_end = HEADER_BYTES + consumer_len;
    let consumer = std::str::from_utf8(&bytes[HEADER_BYTES..consumer_end])
        .map_err(|_| FormatError::NameNotUtf8)?;
    let topic = std::str::from_utf8(&bytes[consumer_end..checked_len])
        .map_err(|_| FormatError::NameNotUtf8)?;
    let found =
        OffsetKey::new(consumer, topic, partition).map_err(|_| FormatError::InvalidStoredKey)?;
    if &found != expected {
        return Err(FormatError::WrongKey {
            expected: Box::new(expected.clone()),
            found: Box::new(found),
        });
    }
    if offset < 0 {
        return Err(FormatError::NegativeOffset { offset });
    }
    Ok(offset)
}

/// `N` bytes of `bytes` starting at `start`; callers have checked the length.
fn array_at<const N: usize>(bytes: &[u8], start: usize) -> [u8; N] {
    let mut array = [0; N];
    array.copy_from_slice(&bytes[start..start + N]);
    array
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> OffsetKey {
        OffsetKey::new("billing", "events", 2).unwrap()
    }

    #[test]
    fn an_encoded_file_decodes_to_its_offset() {
        let bytes = encode(&key(), 12);
        assert_eq!(bytes.len(), HEADER_BYTES + 7 + 6 + CHECKSUM_BYTES);
        assert_eq!(decode(&bytes, &key()), Ok(12));
    }

    #[test]
    fn a_file_for_another_key_is_refused() {
        let bytes = encode(&OffsetKey::new("billing", "events", 3).unwrap(), 12);
        assert!(matches!(
            decode(&bytes, &key()),
            Err(FormatError::WrongKey { .. })
        ));
    }

    #[test]
    fn a_future_version_is_refused_as_unsupported() {
        let mut bytes = encode(&key(), 12);
        bytes[5] = 2;
        assert_eq!(
            decode(&bytes, &key()),
            Err(FormatError::UnsupportedVersion { found: 2 })
        );
    }

    #[test]
    fn a_checksummed_negative_offset_is_refused() {
        let mut bytes = encode(&key(), 0);
        bytes[14..22].copy_from_slice(&(-1_i64).to_be_bytes());
        let checked_len = bytes.len() - CHECKSUM_BYTES;
        let checksum = crc32c::crc32c(&bytes[..checked_len]);
        bytes[checked_len..].copy_from_slice(&checksum.to_be_bytes());
        assert_eq!(
            decode(&bytes, &key()),
            Err(FormatError::NegativeOffset { offset: -1 })
        );
    }

    #[test]
    fn an_oversized_file_is_refused_before_parsing() {
        let bytes = vec![0; MAX_FILE_BYTES + 1];
        assert_eq!(decode(&bytes, &key()), Err(FormatError::TooLong));
    }
}
