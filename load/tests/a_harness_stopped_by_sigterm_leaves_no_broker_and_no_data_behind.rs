//! A queue run stopped by SIGTERM (or Ctrl-C) does not die with its servers still running: the
//! harness drops the workload, which kills the child broker and removes its temporary data
//! directory, and exits with an error that says why.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{QUICK_BASELINE, backlog_queue};

/// Longest the test waits for each step.
const STEP_LIMIT: Duration = Duration::from_secs(30);

/// Pids of the processes whose parent is `parent` and whose command line holds `needle`.
fn children_running(parent: u32, needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc is readable") {
        let Ok(pid) = entry.unwrap().file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid …: the comm may hold spaces, so read after its closing paren.
        let mut after = stat[stat.rfind(')').unwrap() + 2..].split(' ');
        let state = after.next().unwrap_or("");
        let ppid = after.next().and_then(|p| p.parse::<u32>().ok());
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if ppid == Some(parent)
            && state != "Z"
            && String::from_utf8_lossy(&cmdline).contains(needle)
        {
            found.push(pid);
        }
    }
    found
}

fn is_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| !stat[stat.rfind(')').unwrap() + 2..].starts_with('Z'))
}

/// The harness's broker data directories under `dir` (`booblik-load-*`).
fn broker_data_dirs(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("booblik-load-"))
        .collect()
}

fn wait_for<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let began = Instant::now();
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(began.elapsed() < STEP_LIMIT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_harness_stopped_by_sigterm_leaves_no_broker_and_no_data_behind() {
    let dir = tempfile::tempdir().unwrap();
    // Far more work than the test waits for: the run is stopped in the middle.
    let mut harness = Command::new(env!("CARGO_BIN_EXE_booblik-load"))
        .args(backlog_queue("100000"))
        .args(["--work-ms", "5", "--pool", "1", "--max-run-s", "120"])
        .args(QUICK_BASELINE)
        .arg("--data-dir")
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("booblik-load starts");
    let broker = wait_for("the child broker", || {
        children_running(harness.id(), "serve-child")
            .first()
            .copied()
    });
    assert!(
        !broker_data_dirs(dir.path()).is_empty(),
        "the broker's data directory exists while it runs"
    );

    let sent = Command::new("kill")
        .args(["-TERM", &harness.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    let status = wait_for("the harness to exit", || harness.try_wait().unwrap());
    let mut stderr = String::new();
    std::io::Read::read_to_string(harness.stderr.as_mut().unwrap(), &mut stderr).unwrap();

    assert!(!status.success(), "a stopped run is not a success");
    assert!(
        stderr.contains("stopped by SIGTERM"),
        "the harness says why it stopped: {stderr}"
    );
    wait_for("the child broker to be gone", || {
        (!is_running(broker)).then_some(())
    });
    assert_eq!(
        broker_data_dirs(dir.path()),
        Vec::<String>::new(),
        "the broker's temporary data directory was removed"
    );
}
