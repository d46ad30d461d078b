//! `durable_file::replace` under SIGKILL: a process replacing one file as fast as it can is
//! killed at random moments, and the file always holds one complete version the process wrote
//! — at least the last one it reported, at most the one it was writing — never a torn mix.
//!
//! The writer is this test binary re-executed with [`CHILD_PATH_ENV`] set (as in
//! `a_killed_saver_always_reopens_to_a_value_it_saved.rs`). Each version is [`VERSION_BYTES`]
//! bytes, all equal to the version number modulo 251 and ending in the number in full, so a torn
//! file (old bytes followed by new) cannot pass for a whole one.

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use booblik_offset_store::durable_file;
use rand::Rng;

const THIS_TEST: &str = "a_durably_replaced_file_survives_sigkill_whole";
/// Set in the writer's environment: the file to replace.
const CHILD_PATH_ENV: &str = "BOOBLIK_DURABLE_FILE_CRASH_WRITER_PATH";
/// Kill-and-check rounds.
const ROUNDS: usize = 20;
/// Bytes per version: several pages, so a write is not one atomic page update.
const VERSION_BYTES: usize = 64 * 1024;
/// The kill lands uniformly in `0..=MAX_KILL_DELAY` after the writer's first report.
const MAX_KILL_DELAY: Duration = Duration::from_millis(30);
/// The writer exits on its own after this, so a killer that died cannot leave it running.
const WRITER_MAX_LIFETIME: Duration = Duration::from_mins(1);
const MARKER: &str = "@writer wrote ";

fn version_bytes(version: u64) -> Vec<u8> {
    let mut bytes = vec![(version % 251) as u8; VERSION_BYTES - 8];
    bytes.extend_from_slice(&version.to_be_bytes());
    bytes
}

/// The version a file holds, or a panic naming how it is torn.
fn version_of(bytes: &[u8]) -> u64 {
    assert_eq!(
        bytes.len(),
        VERSION_BYTES,
        "a torn file: {} bytes",
        bytes.len()
    );
    let version = u64::from_be_bytes(bytes[VERSION_BYTES - 8..].try_into().unwrap());
    assert_eq!(
        bytes,
        version_bytes(version),
        "a torn file for version {version}"
    );
    version
}

#[test]
fn a_durably_replaced_file_survives_sigkill_whole() {
    if let Some(path) = std::env::var_os(CHILD_PATH_ENV) {
        run_writer(&PathBuf::from(path));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshot.bin");
    let mut rng = rand::rng();
    let mut floor = 0_u64;
    let mut killed_mid_run = 0;
    for round in 0..ROUNDS {
        let reported = run_and_kill(&path, rng.random_range(Duration::ZERO..=MAX_KILL_DELAY));
        let held = version_of(&std::fs::read(&path).unwrap());
        let last = reported.last().copied().unwrap_or(floor);
        assert!(
            held == last || held == last + 1,
            "round {round}: the file holds version {held}, the writer had reported {last}"
        );
        if reported.len() > 1 {
            killed_mid_run += 1;
        }
        floor = held;
    }
    assert!(
        killed_mid_run >= ROUNDS / 2,
        "only {killed_mid_run} of {ROUNDS} rounds killed the writer mid-run"
    );
}

/// Starts a writer on `path`, kills it `kill_delay` after its first report, and returns the
/// versions it reported as written.
fn run_and_kill(path: &Path, kill_delay: Duration) -> Vec<u64> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([THIS_TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_PATH_ENV, path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the writer");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let parse = |line: &str| {
        line.rsplit_once(MARKER)
            .map(|(_, version)| version.parse::<u64>().unwrap())
    };
    let mut reported: Vec<u64> = Vec::new();
    for line in lines.by_ref() {
        if let Some(version) = parse(&line.unwrap()) {
            reported.push(version);
            break;
        }
    }
    std::thread::sleep(kill_delay);
    child.kill().expect("SIGKILL the writer");
    let status = child.wait().unwrap();
    assert_eq!(
        status.signal(),
        Some(9),
        "the writer must die by SIGKILL ({status})"
    );
    reported.extend(lines.map_while(Result::ok).filter_map(|line| parse(&line)));
    reported
}

/// The writer: replaces the file with the next version, as fast as it can, printing each one
/// written. Never returns: it is killed, or exits after [`WRITER_MAX_LIFETIME`].
fn run_writer(path: &Path) -> ! {
    let started = std::time::Instant::now();
    let mut version = std::fs::read(path).map_or(0, |bytes| version_of(&bytes));
    while started.elapsed() < WRITER_MAX_LIFETIME {
        version += 1;
        durable_file::replace(path, &version_bytes(version)).unwrap();
        println!("{MARKER}{version}");
    }
    std::process::exit(0)
}
