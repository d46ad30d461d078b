//! `demo --duration-s N` starts an embedded broker and every events sample, shows progress while it
//! runs (the task queue included), stops by itself, passes its end-of-run cross-checks and exits 0; run again on the same
//! data, its follow consumers resume from their saved positions. By default one worker freezes
//! past its lease and the shared sink refuses its late effect; `--no-freeze` turns that off.

mod events_support;

use events_support::Sample;

fn run_demo(data_dir: &str, extra: &[&str]) -> Sample {
    let mut args = vec!["--data-dir", data_dir, "--duration-s", "2", "--rate", "300"];
    args.extend_from_slice(extra);
    Sample::start(env!("CARGO_BIN_EXE_demo"), &args, "warn")
}

/// The number after `label` on the last line containing it.
fn last_number_after(output: &str, label: &str) -> u64 {
    let line = output
        .lines()
        .rev()
        .find(|l| l.contains(label))
        .unwrap_or_else(|| panic!("no {label:?} in:\n{output}"));
    let rest = &line[line.find(label).unwrap() + label.len()..];
    rest.split_whitespace().next().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_runs_for_its_duration_and_passes_its_checks() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("demo-data");
    let data_dir = data_dir.to_str().unwrap();

    let (status, out, err) = run_demo(data_dir, &[]).finish().await;
    assert!(
        status.success(),
        "exit {status}\nstdout:\n{out}\nstderr:\n{err}"
    );
    assert!(
        out.contains(data_dir),
        "the demo names its data directory:\n{out}"
    );
    assert!(out.contains("checks passed"), "{out}");
    assert!(!out.contains("FAILED"), "{out}");
    let sent = last_number_after(&out, "sent ");
    assert!(sent > 0, "the publisher made progress:\n{out}");
    let followed: u64 = (0..3)
        .map(|p| {
            let line = out
                .lines()
                .rev()
                .find(|l| l.contains(&format!("follow p{p}")) && l.contains(" lag "))
                .unwrap();
            last_number_after(line, "records ")
        })
        .sum();
    assert_eq!(followed, sent, "the followers handled every event:\n{out}");
    assert!(out.contains("started from earliest"), "{out}");
    // Layer 2 ran too: tasks were completed by the workers and the logs verified clean.
    let verified = out
        .lines()
        .rev()
        .find(|l| l.contains("task queue verified"))
        .unwrap_or_default();
    let completed = last_number_after(verified, "tasks, ");
    assert!(
        completed > 0,
        "the demo's task queue completed tasks:\n{out}"
    );
    assert!(out.contains(" 0 violations"), "{out}");
    // Fencing shown: the frozen worker's late effect, and only it, was refused.
    let fencing = out
        .lines()
        .find(|l| l.contains("fencing: worker"))
        .unwrap_or_else(|| panic!("no fencing check:\n{out}"));
    assert!(
        fencing.contains("ok ") && fencing.ends_with(" 1 refused"),
        "{fencing}"
    );

    // Same data again, without the freeze: the consumers resume from where the first run saved
    // them, and nothing is refused.
    let (status, out, err) = run_demo(data_dir, &["--no-freeze"]).finish().await;
    assert!(
        status.success(),
        "exit {status}\nstdout:\n{out}\nstderr:\n{err}"
    );
    assert!(out.contains("started from saved position"), "{out}");
    assert!(!out.contains("fencing:"), "{out}");
    assert!(out.contains(" 0 refused"), "{out}");
    assert!(
        out.contains(&format!("{sent} records already in the log")),
        "{out}"
    );
}
