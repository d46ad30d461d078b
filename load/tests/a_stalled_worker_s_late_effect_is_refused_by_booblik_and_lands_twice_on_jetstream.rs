//! The stall chaos on booblik and on JetStream's own work queue, in one invocation: a worker
//! freezes mid-task for 1.5 × its lease (its thread blocks), the task is redelivered to another
//! worker, and the frozen worker then commits its effect and acknowledges.
//!
//! * booblik: the new holder fenced the sink when its work started, so the late effect is
//!   refused — refused effects > 0, duplicate effects 0.
//! * JetStream (`AckWait` as the lease): the late ack is accepted (nats-server issues 4786 and
//!   6937) and nothing can refuse the effect — duplicate effects > 0.
//!
//! Both complete every task. Needs `nats-server` (Debian: `apt-get install nats-server`), hence
//! `#[ignore]`: `.ci/run` installs it and runs this with `--ignored`; locally
//! `cargo test -p booblik-load --test a_stalled_worker_s_late_effect_is_refused_by_booblik_and_lands_twice_on_jetstream -- --ignored`.

mod support;

use support::{integer, run_stall_chaos, system};

#[test]
#[ignore = "needs nats-server installed; .ci/run installs it"]
fn a_stalled_worker_s_late_effect_is_refused_by_booblik_and_lands_twice_on_jetstream() {
    let dir = tempfile::tempdir().unwrap();
    let runs = run_stall_chaos(dir.path(), &[], &["booblik", "jetstream-workqueue"]);
    let booblik = system(&runs, "booblik");
    assert!(
        integer(booblik, "refused_effects") > 0,
        "booblik's sink refused the late effect"
    );
    assert_eq!(
        integer(booblik, "duplicate_effects"),
        0,
        "booblik lets no duplicate through"
    );
    let jetstream = system(&runs, "jetstream-workqueue");
    assert!(
        integer(jetstream, "duplicate_effects") > 0,
        "JetStream accepted the late ack, and the effect landed twice"
    );
    assert_eq!(
        integer(jetstream, "refused_effects"),
        0,
        "nothing on JetStream refuses it"
    );
}
