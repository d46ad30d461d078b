//! `demo --engine jetstream --spawn-nats --duration-s N`: one command starts a local 3-node NATS
//! cluster from the installed `nats-server`, runs the events samples and the task queue on R3
//! streams, passes every end-of-run check (the queue's among them), stops the cluster and exits
//! 0; run again on the same data, the cluster comes back over its stores and the follow
//! consumers resume from their saved positions.
//!
//! Needs `nats-server`: `#[ignore]`d, run by `.ci/run` with `--ignored`
//! (`cargo test -p booblik-samples --test jetstream_demo_runs_on_a_cluster_it_spawns_and_passes_its_checks -- --ignored`).

mod events_support;

use events_support::Sample;

fn run_demo(data_dir: &str) -> Sample {
    let args = [
        "--engine",
        "jetstream",
        "--spawn-nats",
        "--data-dir",
        data_dir,
        "--duration-s",
        "3",
        "--rate",
        "300",
    ];
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
#[ignore = "needs nats-server; run by .ci/run with --ignored"]
async fn the_demo_runs_on_a_spawned_jetstream_cluster_and_passes_its_checks() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("demo-data");
    let data_dir = data_dir.to_str().unwrap();

    let (status, out, err) = run_demo(data_dir).finish().await;
    assert!(
        status.success(),
        "exit {status}\nstdout:\n{out}\nstderr:\n{err}"
    );
    assert!(out.contains("jetstream   nats://127.0.0.1:"), "{out}");
    assert!(out.contains("checks passed"), "{out}");
    assert!(!out.contains("FAILED"), "{out}");
    assert!(out.contains("ok     task queue verified"), "{out}");
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

    // The cluster was stopped at exit: the same data again starts it over its stores.
    let (status, out, err) = run_demo(data_dir).finish().await;
    assert!(
        status.success(),
        "exit {status}\nstdout:\n{out}\nstderr:\n{err}"
    );
    assert!(out.contains("started from saved position"), "{out}");
    assert!(
        out.contains(&format!("{sent} records already in the log")),
        "{out}"
    );
}
