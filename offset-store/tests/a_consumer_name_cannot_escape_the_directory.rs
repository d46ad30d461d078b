//! Consumer and topic names are chosen by users and may hold anything; whatever they hold, the
//! files stay inside the store's directory and each name gets its own position.

use std::path::{Path, PathBuf};

use booblik_offset_store::{FileOffsetStore, OffsetStore};

/// Names that would escape or confuse a naive `dir.join(name)`.
const HOSTILE_NAMES: [&str; 12] = [
    "..",
    ".",
    "../escaped",
    "../../../../../../tmp/escaped",
    "/tmp/escaped",
    "a/../../escaped",
    "..\\escaped",
    "nul\0byte",
    ".hidden",
    "with space and\nnewline",
    "%2E%2E",
    "ünïcødé 🦀",
];

/// Every file below `dir`, recursively.
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_below(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[tokio::test]
async fn hostile_names_stay_inside_the_directory_and_keep_their_own_positions() {
    let sandbox = tempfile::tempdir().unwrap();
    let root = sandbox.path().join("store");
    let store = FileOffsetStore::open(&root).await.unwrap();

    for (offset, name) in (0..).zip(HOSTILE_NAMES) {
        store.save(name, "events", 0, offset).await.unwrap();
        store.save("billing", name, 0, offset).await.unwrap();
    }

    let sandbox_entries: Vec<_> = std::fs::read_dir(sandbox.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(
        sandbox_entries,
        ["store"],
        "nothing may appear next to the store"
    );
    let files = files_below(&root);
    assert_eq!(
        files.len(),
        2 * HOSTILE_NAMES.len(),
        "one file per key: {files:#?}"
    );
    for file in &files {
        let relative = file.strip_prefix(&root).unwrap();
        assert_eq!(
            relative.components().count(),
            3,
            "<consumer>/<topic>/<file>: {relative:?}"
        );
        assert!(
            relative
                .components()
                .all(|part| matches!(part, std::path::Component::Normal(_))),
            "no '.', '..' or root components: {relative:?}"
        );
    }

    let reopened = FileOffsetStore::open(&root).await.unwrap();
    for (offset, name) in (0..).zip(HOSTILE_NAMES) {
        assert_eq!(
            reopened.load(name, "events", 0).await.unwrap(),
            Some(offset),
            "consumer {name:?}"
        );
        assert_eq!(
            reopened.load("billing", name, 0).await.unwrap(),
            Some(offset),
            "topic {name:?}"
        );
    }
}
