//! The stall chaos with the claims protocol on JetStream (`--engine jetstream`: two R3 streams
//! on the 3-node cluster the harness starts) beside JetStream's own work queue, in one
//! invocation: a worker freezes mid-task for 1.5 × its lease, the task goes to another worker,
//! and the frozen worker then commits its effect.
//!
//! * claims over R3 streams (`claims-jetstream`): the new holder fenced the sink when its work
//!   started, under a token that is a stream sequence, so the late effect is refused — refused
//!   effects > 0, duplicate effects 0: the same outcome as on booblik.
//! * the work queue (`jetstream-workqueue`, `AckWait` as the lease): the late ack is accepted and
//!   the effect lands twice — duplicate effects > 0.
//!
//! Both complete every task, and the verifier finds no violation in the claims streams. Needs
//! `nats-server` (Debian: `apt-get install nats-server`), hence `#[ignore]`: `.ci/run` installs
//! it and runs this with `--ignored`; locally
//! `cargo test -p booblik-load --test a_stalled_worker_s_late_effect_is_refused_by_the_claims_protocol_on_jetstream_streams -- --ignored`.

mod support;

use support::{integer, run_stall_chaos, system};

#[test]
#[ignore = "needs nats-server installed; .ci/run installs it"]
fn a_stalled_worker_s_late_effect_is_refused_by_the_claims_protocol_on_jetstream_streams() {
    let dir = tempfile::tempdir().unwrap();
    let runs = run_stall_chaos(
        dir.path(),
        &["--engine", "jetstream"],
        &["claims-jetstream", "jetstream-workqueue"],
    );
    assert!(
        runs.iter().all(|run| run["system"] != "booblik"),
        "--engine jetstream runs the claims protocol on JetStream only"
    );
    let claims = system(&runs, "claims-jetstream");
    assert_eq!(integer(claims, "violations"), 0, "the verifier is clean");
    assert!(
        integer(claims, "refused_effects") > 0,
        "the fenced sink refused the late effect"
    );
    assert_eq!(
        integer(claims, "duplicate_effects"),
        0,
        "the claims protocol lets no duplicate through on JetStream either"
    );
    let workqueue = system(&runs, "jetstream-workqueue");
    assert!(
        integer(workqueue, "duplicate_effects") > 0,
        "JetStream's work queue accepted the late ack, and the effect landed twice"
    );
}
