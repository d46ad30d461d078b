//! The intent: what a relay writing into booblik is about to write, saved *before* the write.
//!
//! booblik records carry no headers, so the target cannot say which source record a target
//! record came from. Instead, before each write the relay saves, durably:
//!
//! ```text
//!   { "from": 120, "records": 40, "target_end": 9_310, "duplicates_counted": 80 }
//!     source offsets 120..160 are about to be appended; the target's end was 9 310 just before;
//!     earlier crashes duplicated 80 records of this partition in all
//! ```
//!
//! After the target acknowledged the write the relay saves its position (160). A crash between
//! the two leaves the position at 120 and the intent in place, so the restart can tell:
//!
//! * the target's end is still 9 310: the write never landed, nothing is duplicated;
//! * it grew by 40: the write landed, and resuming at 120 writes those 40 records again.
//!
//! The restart always resumes at the saved position (at-least-once: a guess that the write
//! landed could skip records if anyone else writes into the target) and *counts* the growth,
//! capped at the batch, as duplicates. So duplicates are bounded by one batch per partition per
//! crash and never silent. With the relay as the target's only writer the count is exact.
//!
//! The running total of duplicates lives in the intent itself, saved in the same replace as
//! the re-based intent of a restart: a relay killed after counting a crash's duplicates but
//! before saving would otherwise count them again on the next start, and one killed after
//! saving but before logging would lose them. In one file, the count is neither doubled nor lost.
//!
//! One small file per partition: `<offsets-dir>/relay-intents/<consumer>.<topic>.<partition>`,
//! replaced with `durable_file::replace_async` (temp + fsync + rename + directory fsync).

use std::path::{Path, PathBuf};

use anyhow::Context;
use booblik_offset_store::durable_file;
use serde::{Deserialize, Serialize};

/// The directory under `--offsets-dir` holding the intents.
pub const INTENT_DIR: &str = "relay-intents";

/// A write about to happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Intent {
    /// The first source offset of the batch.
    pub from: i64,
    /// How many records the batch holds (consecutive source offsets).
    pub records: i64,
    /// The target partition's end (high watermark) just before the write.
    pub target_end: i64,
    /// Records counted as duplicated on this partition by every restart so far.
    #[serde(default)]
    pub duplicates_counted: u64,
}

impl Intent {
    /// The source offset after the batch: what the position becomes once the write is saved.
    pub fn to(&self) -> i64 {
        self.from + self.records
    }

    /// How many of this batch's records may be in the target although the position was not
    /// saved past them, given the target's end now and the position saved.
    pub fn possible_duplicates(&self, saved: i64, target_end_now: i64) -> i64 {
        if saved >= self.to() {
            // The position was saved after the write: a clean step, nothing to count.
            return 0;
        }
        (target_end_now - self.target_end).clamp(0, self.records)
    }
}

/// Where `consumer`'s intent for `topic`'s `partition` lives. The consumer name and the topic
/// use letters, digits, `.`, `_`, `-` (checked by the relay), so the file name stays one path
/// component; the `.intent` suffix keeps it from ever being `.` or `..`.
pub fn path(offsets_dir: &Path, consumer: &str, topic: &str, partition: i32) -> PathBuf {
    offsets_dir
        .join(INTENT_DIR)
        .join(format!("{consumer}.{topic}.{partition}.intent"))
}

/// The intent saved at `path`, or `None` when none was ever saved.
pub async fn load(path: &Path) -> anyhow::Result<Option<Intent>> {
    match tokio::fs::read(path).await {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .with_context(|| format!("{} is not a relay intent", path.display()))
            .map(Some),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Saves `intent` at `path` durably (it must be on disk before the write it announces).
pub async fn save(path: &Path, intent: &Intent) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        tokio::fs::create_dir_all(dir)
            .await
            .with_context(|| format!("cannot create {}", dir.display()))?;
    }
    durable_file::replace_async(path, serde_json::to_vec(intent)?)
        .await
        .with_context(|| format!("cannot save the intent {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTENT: Intent = Intent {
        from: 120,
        records: 40,
        target_end: 9_310,
        duplicates_counted: 0,
    };

    #[test]
    fn a_write_that_never_landed_duplicates_nothing() {
        assert_eq!(INTENT.possible_duplicates(120, 9_310), 0);
    }

    #[test]
    fn a_landed_write_without_its_save_counts_the_whole_batch() {
        assert_eq!(INTENT.possible_duplicates(120, 9_350), 40);
    }

    #[test]
    fn growth_by_other_writers_is_capped_at_the_batch() {
        assert_eq!(INTENT.possible_duplicates(120, 20_000), 40);
    }

    #[test]
    fn a_saved_position_past_the_batch_counts_nothing() {
        assert_eq!(INTENT.possible_duplicates(160, 9_350), 0);
    }

    #[tokio::test]
    async fn an_intent_survives_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let at = path(dir.path(), "relay", "events", 2);
        assert_eq!(load(&at).await.unwrap(), None);
        save(&at, &INTENT).await.unwrap();
        assert_eq!(load(&at).await.unwrap(), Some(INTENT));
    }
}
