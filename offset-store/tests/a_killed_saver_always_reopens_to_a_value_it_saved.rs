//! Crash safety: a process saving positions as fast as it can is killed with SIGKILL at random
//! moments, over and over, and every reopen yields a value the process really saved — at least
//! the last one it reported as saved, at most the one it was saving — never garbage, never an
//! error, never `None` after a save.
//!
//! The saver is this very test binary, re-executed with [`CHILD_DIR_ENV`] set: the test sees the
//! variable and becomes the saver instead of the killer. SIGKILL tests the process-crash half
//! of durability (no torn file under the real name, whatever instruction the process dies at);
//! the power-cut half rests on the fsync ordering, which a test on a live kernel cannot cut.

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use booblik_offset_store::{FileOffsetStore, OffsetStore};
use rand::Rng;

/// This test's name, for re-executing the binary as the saver.
const THIS_TEST: &str = "a_killed_saver_always_reopens_to_a_value_it_saved";

/// Set in the saver's environment: the store directory.
const CHILD_DIR_ENV: &str = "BOOBLIK_OFFSET_STORE_CRASH_SAVER_DIR";

/// Kill-and-reopen rounds.
const ROUNDS: usize = 50;

/// Keys the saver advances concurrently (partitions 0..KEYS of one consumer and topic).
const KEYS: i32 = 3;

/// The kill lands uniformly in `0..=MAX_KILL_DELAY` after the saver reports it is ready.
const MAX_KILL_DELAY: Duration = Duration::from_millis(30);

/// How long to wait for the saver to start; only turns a hang into a failure.
const READY_LIMIT: Duration = Duration::from_secs(30);

/// The saver exits on its own after this, so a killer that died cannot leave it running.
const SAVER_MAX_LIFETIME: Duration = Duration::from_mins(1);

/// Starts every line the saver prints for the killer. The test harness in the saver prints
/// too, without a newline before ours, so the killer looks for this marker anywhere in a line.
const SAVER_MARKER: &str = "@saver ";

/// Where the saver and killer meet.
const CONSUMER: &str = "crash-test";
const TOPIC: &str = "events";

#[test]
fn a_killed_saver_always_reopens_to_a_value_it_saved() {
    if let Some(dir) = std::env::var_os(CHILD_DIR_ENV) {
        run_saver(&PathBuf::from(dir));
    }

    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut rng = rand::rng();
    // The value each key reopened to after the previous round.
    let mut verified: Vec<Option<i64>> = vec![None; KEYS as usize];
    let mut saves_reported = 0_usize;
    let mut rounds_killed_mid_run = 0_usize;
    let mut unreported_saves_found = 0_usize;

    for round in 0..ROUNDS {
        let kill_delay = rng.random_range(Duration::ZERO..=MAX_KILL_DELAY);
        let reported = run_and_kill(dir.path(), kill_delay);
        saves_reported += reported.iter().map(Vec::len).sum::<usize>();
        if reported.iter().any(|values| !values.is_empty()) {
            rounds_killed_mid_run += 1;
        }

        let store = runtime.block_on(FileOffsetStore::open(dir.path())).unwrap();
        for partition in 0..KEYS {
            let index = partition as usize;
            let loaded = runtime
                .block_on(store.load(CONSUMER, TOPIC, partition))
                .unwrap_or_else(|error| {
                    panic!("round {round}, partition {partition}: reopen failed: {error}")
                });
            // The saver saves consecutive values, so the file holds either the last value it
            // reported, or the next one if it was killed after saving but before reporting.
            let floor = reported[index].last().copied().or(verified[index]);
            let allowed = match floor {
                None => [None, Some(1)],
                Some(value) => [Some(value), Some(value + 1)],
            };
            assert!(
                allowed.contains(&loaded),
                "round {round}, partition {partition}: reopened to {loaded:?}, \
                 the saver had reported {floor:?} as saved (allowed: {allowed:?})"
            );
            if loaded.is_some() && loaded != floor {
                unreported_saves_found += 1; // killed between a save and its report
            }
            verified[index] = loaded;
        }
    }

    eprintln!(
        "{ROUNDS} kills: {saves_reported} saves reported, {rounds_killed_mid_run} rounds killed \
         mid-run, {unreported_saves_found} reopens found a save made but not yet reported"
    );
    // The test must have killed the saver while it was saving, not only before or after.
    assert!(
        rounds_killed_mid_run >= ROUNDS / 2,
        "only {rounds_killed_mid_run} of {ROUNDS} rounds saw saves before the kill"
    );
    assert!(
        saves_reported > ROUNDS,
        "only {saves_reported} saves in {ROUNDS} rounds"
    );
}

/// Starts a saver on `dir`, kills it `kill_delay` after it is ready, and returns the values it
/// reported as saved, per partition, in order.
fn run_and_kill(dir: &Path, kill_delay: Duration) -> Vec<Vec<i64>> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([THIS_TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_DIR_ENV, dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the saver");
    let stdout = child.stdout.take().unwrap();
    let (lines_tx, lines_rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });

    let mut reported = vec![Vec::new(); KEYS as usize];
    loop {
        let line = lines_rx
            .recv_timeout(READY_LIMIT)
            .expect("the saver reports that it is ready");
        if saver_message(&line) == Some("ready") {
            break;
        }
        record_saved(&line, &mut reported);
    }
    std::thread::sleep(kill_delay);
    child.kill().expect("SIGKILL the saver");
    let status = child.wait().unwrap();
    assert_eq!(
        status.signal(),
        Some(9),
        "the saver must die by SIGKILL, not exit on its own ({status})"
    );
    reader.join().unwrap();
    for line in lines_rx.try_iter() {
        record_saved(&line, &mut reported);
    }
    reported
}

/// The saver's message in `line`, if it holds one.
fn saver_message(line: &str) -> Option<&str> {
    line.rsplit_once(SAVER_MARKER).map(|(_, message)| message)
}

/// Records a `saved <partition> <offset>` message; other lines (the harness's) are ignored.
fn record_saved(line: &str, reported: &mut [Vec<i64>]) {
    let Some(rest) = saver_message(line).and_then(|message| message.strip_prefix("saved ")) else {
        return;
    };
    let (partition, offset) = rest.split_once(' ').expect("saved <partition> <offset>");
    let values = &mut reported[partition.parse::<usize>().unwrap()];
    let offset: i64 = offset.parse().unwrap();
    if let Some(&previous) = values.last() {
        assert_eq!(offset, previous + 1, "the saver saves consecutive values");
    }
    values.push(offset);
}

/// The saver: advances every key by one, as fast as it can, printing each completed save.
/// Never returns: it is killed, or exits after [`SAVER_MAX_LIFETIME`].
fn run_saver(dir: &Path) -> ! {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store = std::sync::Arc::new(FileOffsetStore::open(dir).await.unwrap());
        let mut savers = tokio::task::JoinSet::new();
        for partition in 0..KEYS {
            let store = std::sync::Arc::clone(&store);
            savers.spawn(async move {
                let loaded = store.load(CONSUMER, TOPIC, partition).await;
                let mut offset = loaded.expect("the saver's own load").unwrap_or(0);
                loop {
                    offset += 1;
                    store
                        .save(CONSUMER, TOPIC, partition, offset)
                        .await
                        .expect("save");
                    println!("{SAVER_MARKER}saved {partition} {offset}");
                }
            });
        }
        println!("{SAVER_MARKER}ready");
        let _ = tokio::time::timeout(SAVER_MAX_LIFETIME, savers.join_next()).await;
    });
    std::process::exit(3);
}
