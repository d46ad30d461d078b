//! Where each position lives inside the store's directory.
//!
//! ```text
//! <dir>/
//!   <consumer, escaped>/
//!     <topic, escaped>/
//!       <partition>.offset       the position (see crate::format)
//!       <partition>.offset.tmp   a save in flight, or left behind by a crash (never read)
//! ```
//!
//! Names are escaped by [`crate::name_encoding`], so each is exactly one directory entry below
//! `<dir>` whatever it contains. One directory level per name (rather than one long flat file
//! name) keeps every component under the 255-byte limit for the longest valid topic name, and
//! lets an operator see at a glance which consumers exist. The layout is reversible:
//! [`list_keys`] reads the keys back from the names.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{IoStep, OffsetStoreError};
use crate::key::OffsetKey;
use crate::name_encoding::{decode_component, encode_component};

/// Suffix of an offset file: `<partition>.offset`.
pub const OFFSET_FILE_SUFFIX: &str = ".offset";

/// Suffix added to an offset file's name for the temporary file of a save.
pub const TEMP_FILE_SUFFIX: &str = ".tmp";

/// Every path that belongs to one key.
#[derive(Debug, Clone)]
pub struct KeyPaths {
    /// `<dir>/<consumer>`.
    pub consumer_dir: PathBuf,
    /// `<dir>/<consumer>/<topic>`: holds the offset file, fsynced after each rename.
    pub topic_dir: PathBuf,
    /// `<dir>/<consumer>/<topic>/<partition>.offset`.
    pub file: PathBuf,
    /// `<dir>/<consumer>/<topic>/<partition>.offset.tmp`.
    pub temp: PathBuf,
}

impl KeyPaths {
    /// The paths of `key` below `root`.
    pub fn new(root: &Path, key: &OffsetKey) -> Self {
        let consumer_dir = root.join(encode_component(key.consumer()));
        let topic_dir = consumer_dir.join(encode_component(key.topic()));
        let file_name = offset_file_name(key.partition());
        let file = topic_dir.join(&file_name);
        let temp = topic_dir.join(format!("{file_name}{TEMP_FILE_SUFFIX}"));
        Self {
            consumer_dir,
            topic_dir,
            file,
            temp,
        }
    }
}

/// `<partition>.offset`.
fn offset_file_name(partition: i32) -> String {
    format!("{partition}{OFFSET_FILE_SUFFIX}")
}

/// The partition of an offset file's name, only if [`offset_file_name`] would produce exactly
/// that name (no sign, no leading zeros), so temp files and foreign files are not mistaken for it.
fn parse_offset_file_name(name: &str) -> Option<i32> {
    let digits = name.strip_suffix(OFFSET_FILE_SUFFIX)?;
    let partition: i32 = digits.parse().ok()?;
    (partition >= 0 && offset_file_name(partition) == name).then_some(partition)
}

/// What a layout level holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EntryKind {
    Directory,
    File,
}

/// The entries of `dir` of the given kind whose names decode with `decode`, with their decoded
/// values. Entries that are not ours (`lost+found`, temp files, an operator's notes) are
/// skipped.
fn decoded_entries<T>(
    dir: &Path,
    kind: EntryKind,
    decode: impl Fn(&str) -> Option<T>,
) -> Result<Vec<(PathBuf, T)>, OffsetStoreError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(OffsetStoreError::io(IoStep::ListDirectory, dir, error)),
    };
    let mut decoded = Vec::new();
    for entry in entries {
        let entry =
            entry.map_err(|error| OffsetStoreError::io(IoStep::ListDirectory, dir, error))?;
        let path = entry.path();
        let kind_matches = match kind {
            EntryKind::Directory => path.is_dir(),
            EntryKind::File => path.is_file(),
        };
        match entry.file_name().to_str().and_then(&decode) {
            Some(value) if kind_matches => decoded.push((path, value)),
            _ => tracing::debug!(path = %path.display(), "skipping a foreign entry"),
        }
    }
    Ok(decoded)
}

/// Every key with an offset file below `root`, sorted. Blocking.
pub fn list_keys(root: &Path) -> Result<Vec<OffsetKey>, OffsetStoreError> {
    let mut keys = Vec::new();
    for (consumer_dir, consumer) in decoded_entries(root, EntryKind::Directory, decode_component)? {
        for (topic_dir, topic) in
            decoded_entries(&consumer_dir, EntryKind::Directory, decode_component)?
        {
            for (_, partition) in
                decoded_entries(&topic_dir, EntryKind::File, parse_offset_file_name)?
            {
                // The names decoded, so they were written for a valid key; a name that is
                // nevertheless invalid (e.g. hand-made, too long) is not ours either.
                if let Ok(key) = OffsetKey::new(consumer.clone(), topic.clone(), partition) {
                    keys.push(key);
                }
            }
        }
    }
    keys.sort();
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_canonical_offset_file_names_parse() {
        assert_eq!(parse_offset_file_name("0.offset"), Some(0));
        assert_eq!(parse_offset_file_name("17.offset"), Some(17));
        assert_eq!(parse_offset_file_name("017.offset"), None);
        assert_eq!(parse_offset_file_name("+1.offset"), None);
        assert_eq!(parse_offset_file_name("-1.offset"), None);
        assert_eq!(parse_offset_file_name("1.offset.tmp"), None);
        assert_eq!(parse_offset_file_name("1"), None);
    }

    #[test]
    fn every_path_of_a_key_is_below_the_root() {
        let key = OffsetKey::new("..", "/etc", 0).unwrap();
        let paths = KeyPaths::new(Path::new("/store"), &key);
        assert_eq!(paths.consumer_dir, Path::new("/store/%2E."));
        assert_eq!(paths.file, Path::new("/store/%2E./%2Fetc/0.offset"));
        assert_eq!(paths.temp, Path::new("/store/%2E./%2Fetc/0.offset.tmp"));
    }
}
