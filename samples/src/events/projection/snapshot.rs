//! The projection's snapshot: the read model **and the positions it reflects, in one file**,
//! replaced durably (`booblik_offset_store::durable_file`: temp file, fsync, rename, directory
//! fsync). A crash at any instant leaves the previous snapshot or the new one, and either is a
//! model that is exactly the fold of the log below its positions — so a restart restores it and
//! follows on from those positions instead of replaying the whole log.
//!
//! The positions live *inside* the model ([`Projection::positions`]), and a snapshot is taken
//! under the model's read lock, so the two cannot drift apart even between saves. What must not
//! be done instead: keep the positions in an offset store next to a separately saved model — a
//! crash between the two writes counts events twice or loses them for good.
//!
//! The file says which topic it folds and its format version; a snapshot of another topic, of an
//! unknown version, or that does not decode is an error that names the file, never a silent
//! rebuild. A snapshot whose positions fall before the log's start (retention deleted what it had
//! not folded yet) makes the fold fail loudly with offset-out-of-range: delete the file to rebuild.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::model::Projection;

/// The snapshot file format written by this code.
pub const SNAPSHOT_FORMAT_VERSION: u32 = 1;
/// Default interval between two snapshots.
pub const DEFAULT_SNAPSHOT_EVERY_MS: u64 = 1_000;
/// Shortest interval accepted: each snapshot costs two fsyncs.
pub const MIN_SNAPSHOT_EVERY_MS: u64 = 10;
/// Largest snapshot file read back; a bigger one is refused rather than read into memory.
pub const MAX_SNAPSHOT_BYTES: u64 = 256 * 1024 * 1024;

/// Where and how often the projection saves its snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotConfig {
    /// The snapshot file; its directory must exist.
    pub path: PathBuf,
    /// Interval between snapshots while folding (one more is written at a clean stop).
    pub every_ms: u64,
}

/// Why a snapshot could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// Reading the file failed.
    #[error("cannot read the snapshot {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file is larger than [`MAX_SNAPSHOT_BYTES`].
    #[error("the snapshot {} is {bytes} bytes, more than {MAX_SNAPSHOT_BYTES}", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        bytes: u64,
    },
    /// The bytes are not a snapshot.
    #[error("the snapshot {} does not decode: {source}", path.display())]
    Decode {
        /// The file.
        path: PathBuf,
        /// What the decoder said.
        source: serde_json::Error,
    },
    /// Written by another format version.
    #[error("the snapshot {} has format version {found}, this code reads {SNAPSHOT_FORMAT_VERSION}", path.display())]
    Version {
        /// The file.
        path: PathBuf,
        /// The version in the file.
        found: u32,
    },
    /// A snapshot of another topic.
    #[error("the snapshot {} folds topic {found:?}, not {expected:?}", path.display())]
    Topic {
        /// The file.
        path: PathBuf,
        /// The topic in the file.
        found: String,
        /// The topic being projected.
        expected: String,
    },
    /// Writing the file failed.
    #[error(transparent)]
    Write(#[from] booblik_offset_store::OffsetStoreError),
    /// The interval is below [`MIN_SNAPSHOT_EVERY_MS`].
    #[error("snapshot every {0} ms: at least {MIN_SNAPSHOT_EVERY_MS} ms")]
    Interval(u64),
}

/// The first field of every version of the file.
#[derive(Deserialize)]
struct Header {
    format: u32,
}

/// The file: its format, the topic, and the model with its positions.
#[derive(Serialize, Deserialize)]
struct SnapshotFile {
    format: u32,
    topic: String,
    model: Projection,
}

/// The model saved at `path` for `topic`; `None` if there is no file yet.
pub fn load(path: &Path, topic: &str) -> Result<Option<Projection>, SnapshotError> {
    let read = |source| SnapshotError::Read {
        path: path.to_path_buf(),
        source,
    };
    let bytes = match std::fs::metadata(path) {
        Ok(meta) if meta.len() > MAX_SNAPSHOT_BYTES => {
            return Err(SnapshotError::TooLarge {
                path: path.to_path_buf(),
                bytes: meta.len(),
            });
        }
        Ok(_) => std::fs::read(path).map_err(read)?,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(read(error)),
    };
    let decode = |source| SnapshotError::Decode {
        path: path.to_path_buf(),
        source,
    };
    // The version first: a file of another version need not decode as this one.
    let header: Header = serde_json::from_slice(&bytes).map_err(decode)?;
    if header.format != SNAPSHOT_FORMAT_VERSION {
        return Err(SnapshotError::Version {
            path: path.to_path_buf(),
            found: header.format,
        });
    }
    let file: SnapshotFile = serde_json::from_slice(&bytes).map_err(decode)?;
    if file.topic != topic {
        return Err(SnapshotError::Topic {
            path: path.to_path_buf(),
            found: file.topic,
            expected: topic.to_owned(),
        });
    }
    Ok(Some(file.model))
}

/// The bytes of a snapshot of `model` (taken by the caller under the model's lock, so that the
/// state and its positions are one moment's).
pub fn encode(topic: &str, model: &Projection) -> Vec<u8> {
    #[derive(Serialize)]
    struct SnapshotRef<'a> {
        format: u32,
        topic: &'a str,
        model: &'a Projection,
    }
    serde_json::to_vec(&SnapshotRef {
        format: SNAPSHOT_FORMAT_VERSION,
        topic,
        model,
    })
    .expect("a projection always serializes")
}

/// Replaces the snapshot at `path` with `bytes` (from [`encode`]), durably.
pub async fn save(path: &Path, bytes: Vec<u8>) -> Result<(), SnapshotError> {
    booblik_offset_store::durable_file::replace_async(path, bytes).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{EventKind, UserEvent};

    fn model() -> Projection {
        let mut model = Projection::new();
        for seq in 0..3 {
            let event = UserEvent {
                publisher_id: uuid::Uuid::nil(),
                user_id: "user-001".into(),
                seq,
                kind: EventKind::ViewedPage,
                at_ms: 0,
            };
            model.apply(2, 10 + seq as i64, &event.encode());
        }
        model
    }

    #[test]
    fn a_saved_snapshot_loads_back_with_its_positions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("snapshot.json");
        booblik_offset_store::durable_file::replace(&path, &encode("events", &model())).unwrap();
        let loaded = load(&path, "events").unwrap().unwrap();
        assert_eq!(loaded.positions(), model().positions());
        assert_eq!(loaded.events_per_user(), model().events_per_user());
        assert_eq!(loaded.tallies(), model().tallies());
    }

    #[test]
    fn a_missing_file_is_none_and_a_foreign_one_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("snapshot.json");
        assert!(load(&path, "events").unwrap().is_none());
        booblik_offset_store::durable_file::replace(&path, &encode("other", &model())).unwrap();
        let error = load(&path, "events").unwrap_err();
        assert!(matches!(error, SnapshotError::Topic { .. }), "{error}");
        std::fs::write(&path, b"{\"format\": 1, \"top").unwrap();
        let error = load(&path, "events").unwrap_err();
        assert!(error.to_string().contains("snapshot.json"), "{error}");
        std::fs::write(&path, br#"{"format":9,"topic":"events","model":null}"#).unwrap();
        assert!(matches!(
            load(&path, "events"),
            Err(SnapshotError::Version { found: 9, .. })
        ));
    }
}
