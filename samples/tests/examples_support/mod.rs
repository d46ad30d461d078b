//! Runs an example in `examples/` as a child process, the way `cargo run --example NAME` would,
//! without cargo: each `examples_*` test file compiles its example as a module (`#[path]`), and
//! the child is that test binary re-executed with [`CHILD_ARGS_ENV`] set, in which the test calls
//! the example's `run` and exits with its status instead of testing. So the test always runs the
//! example's current code, in the profile the tests are built in, with no build step of its own.

#![allow(dead_code)] // Each test file uses a different subset.

use std::future::Future;
use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Set in the child's environment: the example's arguments, separated by [`ARG_SEPARATOR`].
pub const CHILD_ARGS_ENV: &str = "BOOBLIK_EXAMPLE_CHILD_ARGS";
const ARG_SEPARATOR: char = '\u{1f}';
/// What the issue asks of every example: done within 30 s.
pub const EXAMPLE_LIMIT: Duration = Duration::from_secs(30);

/// In the child: the example's arguments (the program name first, for clap). `None` in the test.
pub fn child_args() -> Option<Vec<String>> {
    let joined = std::env::var(CHILD_ARGS_ENV).ok()?;
    let mut args = vec!["example".to_owned()];
    args.extend(
        joined
            .split(ARG_SEPARATOR)
            .filter(|a| !a.is_empty())
            .map(str::to_owned),
    );
    Some(args)
}

/// In the child: runs the example to its end and exits 0, or prints its error and exits 1.
pub fn run_child(example: impl Future<Output = anyhow::Result<()>>) -> ! {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    match runtime.block_on(example) {
        Ok(()) => std::process::exit(0),
        Err(error) => {
            eprintln!("Error: {error:#}");
            std::process::exit(1)
        }
    }
}

/// Starts the child for `test` (the calling test's name) with the example's `args`.
pub fn spawn(test: &str, args: &[&str], stdout: Stdio) -> Child {
    Command::new(std::env::current_exe().expect("the test binary"))
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ARGS_ENV, args.join(&ARG_SEPARATOR.to_string()))
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the example")
}

/// Runs the example to its end: its exit status and what it printed. Panics if it takes longer
/// than [`EXAMPLE_LIMIT`] (after killing it).
pub fn run_example(test: &str, args: &[&str]) -> (ExitStatus, String) {
    let started = Instant::now();
    let mut child = spawn(test, args, Stdio::piped());
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        let _ = stdout.read_to_string(&mut out);
        out
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > EXAMPLE_LIMIT {
            let _ = child.kill();
            panic!("the example ran longer than {EXAMPLE_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status, example_output(&reader.join().unwrap()))
}

/// What the example printed: the child's stdout without the lines its test harness adds
/// (`running 1 test`, and `test NAME ... ` before the example's first line).
fn example_output(stdout: &str) -> String {
    stdout
        .lines()
        .filter(|line| !line.is_empty() && !line.starts_with("running "))
        .map(|line| match line.split_once(" ... ") {
            Some((harness, rest)) if harness.starts_with("test ") => rest,
            _ => line,
        })
        .flat_map(|line| [line, "\n"])
        .collect()
}
