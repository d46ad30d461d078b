//! The verifier classifies every task and counts lost work from honest logs.

use booblik_samples::queue::record::{Claim, ClaimsRecord, Done, Extend, Task};
use booblik_samples::queue::state::{LogName, QueueConfig};
use booblik_samples::queue::verify::{VerifyConfig, Violation, verify, verify_encoded};
use uuid::Uuid;

const LEASE_MS: u64 = 1_000;
const T0_MS: u64 = 1_700_000_000_000;

fn task_id(n: u128) -> Uuid {
    Uuid::from_u128(0x7A5C_0000 + n)
}

fn worker(n: u128) -> Uuid {
    Uuid::from_u128(0xAAAA_0000 + n)
}

fn task(n: u128) -> Task {
    Task {
        task_id: task_id(n),
        payload: vec![n as u8],
        submitted_at_ms: T0_MS,
    }
}

fn claim(task: u128, by: u128, at_ms: u64) -> ClaimsRecord {
    ClaimsRecord::Claim(Claim {
        task_id: task_id(task),
        worker_id: worker(by),
        claimed_at_ms: at_ms,
        lease_ms: LEASE_MS,
    })
}

fn extend(task: u128, by: u128, token: i64, at_ms: u64) -> ClaimsRecord {
    ClaimsRecord::Extend(Extend {
        task_id: task_id(task),
        worker_id: worker(by),
        token,
        extended_at_ms: at_ms,
        lease_ms: LEASE_MS,
    })
}

fn done(task: u128, by: u128, token: i64, at_ms: u64) -> ClaimsRecord {
    ClaimsRecord::Done(Done {
        task_id: task_id(task),
        worker_id: worker(by),
        token,
        done_at_ms: at_ms,
        result: Vec::new(),
    })
}

fn numbered<T>(records: Vec<T>) -> Vec<(i64, T)> {
    records
        .into_iter()
        .enumerate()
        .map(|(offset, record)| (offset as i64, record))
        .collect()
}

#[test]
fn a_takeover_after_expiry_is_a_duplicate_execution_and_the_late_done_is_fenced() {
    let tasks = numbered(vec![task(1)]);
    let claims = numbered(vec![
        claim(1, 1, T0_MS),
        extend(1, 1, 0, T0_MS + LEASE_MS / 3),
        // Worker 1 stalls; its lease lapses at T0 + 4/3 LEASE and worker 2 takes over.
        claim(1, 2, T0_MS + 2 * LEASE_MS),
        done(1, 1, 0, T0_MS + 2 * LEASE_MS + 1),
        done(1, 2, 2, T0_MS + 2 * LEASE_MS + 2),
    ]);
    let config = VerifyConfig {
        queue: QueueConfig::default(),
        as_of_ms: T0_MS + 3 * LEASE_MS,
        lost_after_ms: 0,
    };
    let report = verify(&tasks, &claims, &config);
    assert!(report.is_clean(), "{:#?}", report.violations);
    let summary = &report.summary;
    assert_eq!(summary.tasks, 1);
    assert_eq!(summary.completed, 1);
    assert_eq!(summary.never_completed, 0);
    assert_eq!(summary.claims, 2);
    assert_eq!(summary.wins, 2);
    assert_eq!(summary.expired_leases, 1);
    assert_eq!(summary.extends, 1);
    assert_eq!(summary.dones_accepted, 1);
    assert_eq!(summary.fenced_dones, 1);
    assert_eq!(summary.duplicate_executions, 1);
    assert_eq!(summary.confirmed_duplicate_executions, 1);
    assert_eq!(summary.duplicate_effects, 0);
    assert_eq!(summary.max_wins_per_task, 2);
}

#[test]
fn unfinished_tasks_are_in_flight_pending_or_lost_by_the_given_clock() {
    let tasks = numbered(vec![task(1), task(2), task(3), task(4)]);
    let claims = numbered(vec![
        claim(1, 1, T0_MS),                // task 1: lease lapses at T0 + LEASE
        claim(2, 1, T0_MS + 5 * LEASE_MS), // task 2: leased until T0 + 6 LEASE
        claim(3, 2, T0_MS),
        done(3, 2, 2, T0_MS + 1), // task 3: completed
    ]); // task 4: never claimed, idle since T0
    let config = VerifyConfig {
        queue: QueueConfig::default(),
        as_of_ms: T0_MS + 5 * LEASE_MS,
        lost_after_ms: 4 * LEASE_MS + LEASE_MS / 2,
    };
    let report = verify(&tasks, &claims, &config);
    let summary = &report.summary;
    assert_eq!(summary.completed, 1, "task 3");
    assert_eq!(summary.in_flight, 1, "task 2");
    assert_eq!(summary.pending, 1, "task 1: idle 4 leases");
    assert_eq!(summary.lost, 1, "task 4: idle 5 leases");
    assert_eq!(
        report.violations,
        vec![Violation::TaskLost {
            task_id: task_id(4),
            idle_since_ms: T0_MS,
        }]
    );
}

#[test]
fn a_claim_for_a_task_missing_from_the_tasks_log_is_flagged() {
    let tasks = numbered(vec![task(1)]);
    let claims = numbered(vec![claim(1, 1, T0_MS), claim(9, 1, T0_MS)]);
    let config = VerifyConfig {
        queue: QueueConfig::default(),
        as_of_ms: T0_MS,
        lost_after_ms: u64::MAX,
    };
    let report = verify(&tasks, &claims, &config);
    assert_eq!(report.summary.unknown_task_claims, 1);
    assert_eq!(
        report.violations,
        vec![Violation::ClaimForUnknownTask {
            offset: 1,
            task_id: task_id(9),
        }]
    );
}

#[test]
fn undecodable_records_are_reported_and_skipped() {
    let tasks = vec![(0_i64, task(1).encode()), (1, vec![0xFF, 0x00])];
    let claims = vec![
        (0_i64, claim(1, 1, T0_MS).encode()),
        (1, Vec::new()),
        (2, done(1, 1, 0, T0_MS + 1).encode()),
    ];
    let config = VerifyConfig {
        queue: QueueConfig::default(),
        as_of_ms: T0_MS,
        lost_after_ms: 0,
    };
    let report = verify_encoded(&tasks, &claims, &config);
    assert_eq!(report.summary.undecodable_records, 2);
    assert_eq!(report.summary.completed, 1);
    let undecodable: Vec<_> = report
        .violations
        .iter()
        .filter_map(|violation| match violation {
            Violation::UndecodableRecord { log, offset, .. } => Some((*log, *offset)),
            _ => None,
        })
        .collect();
    assert_eq!(undecodable, vec![(LogName::Tasks, 1), (LogName::Claims, 1)]);
    assert_eq!(report.violations.len(), 2, "{:#?}", report.violations);
}

#[test]
fn a_dead_lettered_task_is_counted_and_not_lost() {
    let tasks = numbered(vec![task(1)]);
    let claims = numbered(vec![
        claim(1, 1, T0_MS),
        claim(1, 2, T0_MS + LEASE_MS),
        claim(1, 3, T0_MS + 2 * LEASE_MS),
        claim(1, 1, T0_MS + 3 * LEASE_MS),
    ]);
    let config = VerifyConfig {
        queue: QueueConfig::default(), // three expired leases
        as_of_ms: T0_MS + 10 * LEASE_MS,
        lost_after_ms: 0,
    };
    let report = verify(&tasks, &claims, &config);
    assert!(report.is_clean(), "{:#?}", report.violations);
    assert_eq!(report.summary.dead_lettered, 1);
    assert_eq!(report.summary.never_completed, 1);
    assert_eq!(report.summary.expired_leases, 3);
    assert_eq!(report.summary.duplicate_executions, 2);
    assert_eq!(report.summary.confirmed_duplicate_executions, 0);
}
