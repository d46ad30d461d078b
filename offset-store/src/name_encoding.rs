//! Turning arbitrary consumer and topic names into safe, reversible directory names.
//!
//! A consumer name is chosen by whoever runs the consumer, so it may hold `/`, `..`, spaces,
//! NUL or emoji. Used as a path component unchanged, `../../etc` would escape the store's
//! directory. So every name goes through one escaping rule before it touches the file system:
//!
//! * ASCII letters, digits, `_` and `-` are kept;
//! * `.` is kept, except as the first byte (so no name is ever `.`, `..` or hidden);
//! * every other byte (of the UTF-8 encoding) becomes `%XX`, two **upper-case** hex digits.
//!
//! The result is never empty (names are non-empty), never contains `/` or NUL, and never starts
//! with `.`, so it is always one ordinary entry inside its parent directory. Valid topic names
//! (`[A-Za-z0-9._-]{1,249}`) stay readable, changing at most a leading dot.
//!
//! The encoding is a bijection onto its *canonical* outputs: [`decode_component`] refuses
//! lower-case hex and escapes of bytes that would have been kept, so two different spellings of
//! one name cannot both exist on disk.

/// Longest encoded name, in bytes: ext4, XFS, btrfs, ZFS and APFS all cap one path component at
/// 255 bytes.
pub const MAX_ENCODED_NAME_BYTES: usize = 255;

/// The escape introducer.
const ESCAPE: u8 = b'%';

/// Upper-case hex digits, indexed by nibble.
const HEX_DIGITS: &[u8; 16] = b"0123456789ABCDEF";

/// Whether `byte` at `index` of the raw name is written as itself.
fn is_kept(byte: u8, index: usize) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-' || (byte == b'.' && index > 0)
}

/// Length in bytes that [`encode_component`] would produce, without allocating.
pub fn encoded_len(raw: &str) -> usize {
    raw.bytes()
        .enumerate()
        .map(|(index, byte)| if is_kept(byte, index) { 1 } else { 3 })
        .sum()
}

/// Escapes `raw` into a single safe path component (see the module docs for the rule).
pub fn encode_component(raw: &str) -> String {
    let mut encoded = String::with_capacity(encoded_len(raw));
    for (index, byte) in raw.bytes().enumerate() {
        if is_kept(byte, index) {
            encoded.push(char::from(byte));
        } else {
            encoded.push(char::from(ESCAPE));
            encoded.push(char::from(HEX_DIGITS[usize::from(byte >> 4)]));
            encoded.push(char::from(HEX_DIGITS[usize::from(byte & 0x0F)]));
        }
    }
    encoded
}

/// The value of one upper-case hex digit.
fn hex_value(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'A'..=b'F' => Some(digit - b'A' + 10),
        _ => None,
    }
}

/// Reverses [`encode_component`]. Returns `None` for anything `encode_component` could not have
/// produced: empty, a bad or non-canonical escape, a byte that should have been escaped, or
/// bytes that are not UTF-8 once unescaped. Directory entries that do not decode are not ours.
pub fn decode_component(encoded: &str) -> Option<String> {
    if encoded.is_empty() {
        return None;
    }
    let bytes = encoded.as_bytes();
    let mut raw = Vec::with_capacity(bytes.len());
    let mut position = 0;
    while position < bytes.len() {
        let byte = bytes[position];
        if byte == ESCAPE {
            let high = hex_value(*bytes.get(position + 1)?)?;
            let low = hex_value(*bytes.get(position + 2)?)?;
            let unescaped = (high << 4) | low;
            if is_kept(unescaped, raw.len()) {
                return None; // Non-canonical: this byte is never escaped at this index.
            }
            raw.push(unescaped);
            position += 3;
        } else {
            if !is_kept(byte, raw.len()) {
                return None;
            }
            raw.push(byte);
            position += 1;
        }
    }
    String::from_utf8(raw).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn dot_names_never_encode_to_dot_entries() {
        assert_eq!(encode_component("."), "%2E");
        assert_eq!(encode_component(".."), "%2E.");
        assert_eq!(encode_component("../x"), "%2E.%2Fx");
        assert_eq!(encode_component(".hidden"), "%2Ehidden");
    }

    #[test]
    fn valid_topic_names_stay_readable() {
        assert_eq!(encode_component("events.v2_raw-1"), "events.v2_raw-1");
    }

    #[test]
    fn non_canonical_spellings_do_not_decode() {
        assert_eq!(decode_component("%2e"), None, "lower-case hex");
        assert_eq!(decode_component("%61"), None, "an escaped letter");
        assert_eq!(decode_component(".x"), None, "a leading dot");
        assert_eq!(decode_component("a b"), None, "an unescaped space");
        assert_eq!(decode_component("%2"), None, "a cut escape");
        assert_eq!(decode_component(""), None, "empty");
        assert_eq!(decode_component("%FF"), None, "not UTF-8");
    }

    proptest! {
        #[test]
        fn every_name_round_trips_through_a_single_safe_component(raw in any::<String>().prop_filter("non-empty", |s| !s.is_empty())) {
            let encoded = encode_component(&raw);
            prop_assert_eq!(encoded.len(), encoded_len(&raw));
            prop_assert!(!encoded.starts_with('.'));
            prop_assert!(!encoded.contains('/') && !encoded.contains('\0'));
            prop_assert_eq!(decode_component(&encoded), Some(raw));
        }

        #[test]
        fn anything_that_decodes_encodes_back_to_itself(encoded in "([A-Za-z0-9._-]|%[0-9A-Fa-f]{2}){1,8}") {
            if let Some(raw) = decode_component(&encoded) {
                prop_assert_eq!(encode_component(&raw), encoded);
            }
        }
    }
}
