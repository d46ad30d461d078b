//! Processes a harness started, read from `/proc`: for the tests that stop a harness with a
//! signal and check that nothing it started outlives it.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{QUICK_BASELINE, backlog_queue};

/// Longest a test waits for each step.
pub const STEP_LIMIT: Duration = Duration::from_secs(30);

/// (state, ppid) of a process, from `/proc/<pid>/stat`; `None` once it is gone.
fn state_and_parent(pid: u32) -> Option<(String, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // pid (comm) state ppid …: the comm may hold spaces, so read after its closing paren.
    let mut after = stat[stat.rfind(')')? + 2..].split(' ');
    let state = after.next()?.to_owned();
    let ppid = after.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Pids of the live (not zombie) processes whose parent is `parent` and whose command line
/// holds `needle`.
pub fn children_running(parent: u32, needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc is readable") {
        let Ok(pid) = entry.unwrap().file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Some((state, ppid)) = state_and_parent(pid) else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if ppid == parent && state != "Z" && String::from_utf8_lossy(&cmdline).contains(needle) {
            found.push(pid);
        }
    }
    found
}

/// True while `pid` is alive (a zombie is not).
pub fn is_running(pid: u32) -> bool {
    state_and_parent(pid).is_some_and(|(state, _)| state != "Z")
}

/// The names of the entries of `dir` that start with `prefix`.
pub fn entries_named(dir: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(prefix))
        .collect()
}

/// Polls `probe` every 50 ms until it returns something; panics after [`STEP_LIMIT`].
pub fn wait_for<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let began = Instant::now();
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(began.elapsed() < STEP_LIMIT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends SIGTERM to `child`, waits for it to exit and returns whether it succeeded and its
/// standard error (which the caller must have piped).
pub fn terminate(child: &mut Child) -> (bool, String) {
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success(), "kill -TERM {} failed", child.id());
    let status = wait_for("the harness to exit", || child.try_wait().unwrap());
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    (status.success(), stderr)
}

/// Starts `booblik-load queue` with far more work than a test waits for (100 000 tasks, 5 ms
/// each), plus `extra` flags, over `dir`; its standard error is piped for [`terminate`].
pub fn start_long_queue_run(dir: &Path, extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_booblik-load"))
        .args(backlog_queue("100000"))
        .args(extra)
        .args(["--work-ms", "5", "--pool", "1", "--max-run-s", "120"])
        .args(QUICK_BASELINE)
        .arg("--data-dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("booblik-load starts")
}

/// Stops `harness` with SIGTERM ([`terminate`]) and checks that it exited with an error that
/// says why.
pub fn terminate_and_expect_the_reason(harness: &mut Child) {
    let (succeeded, stderr) = terminate(harness);
    assert!(!succeeded, "a stopped run is not a success");
    assert!(
        stderr.contains("stopped by SIGTERM"),
        "the harness says why it stopped: {stderr}"
    );
}
