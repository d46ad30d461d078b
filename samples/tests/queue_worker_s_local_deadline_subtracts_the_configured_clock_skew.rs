//! A worker's local lease deadline is `issued_at + lease_ms − max_clock_skew_ms`: it stops
//! working before the earliest moment another worker's claim can win, as long as no writer's
//! clock is off by more than the configured skew (a claimer whose clock runs ahead by ε may take
//! over ε early). Unset, the skew is a tenth of the lease, the margin the worker always kept.

use std::time::{Duration, Instant};

use booblik_samples::queue::worker::{
    DEFAULT_CLOCK_SKEW_PERCENT, WorkerConfig, WorkerConfigError, local_lease_deadline,
};

const LEASE_MS: u64 = 1_000;

#[test]
fn the_local_deadline_is_the_lease_less_the_configured_skew() {
    let issued_at = Instant::now();
    let config = WorkerConfig {
        lease_ms: LEASE_MS,
        max_clock_skew_ms: Some(300),
        ..WorkerConfig::default()
    };
    assert_eq!(config.validate(), Ok(()));
    assert_eq!(config.clock_skew_ms(), 300);
    assert_eq!(
        config.local_lease_deadline(issued_at),
        issued_at + Duration::from_millis(700)
    );
    assert_eq!(
        local_lease_deadline(issued_at, LEASE_MS, 300),
        issued_at + Duration::from_millis(700)
    );

    let unset = WorkerConfig {
        max_clock_skew_ms: None,
        ..config
    };
    assert_eq!(
        unset.clock_skew_ms(),
        LEASE_MS * DEFAULT_CLOCK_SKEW_PERCENT / 100
    );
    assert_eq!(
        unset.local_lease_deadline(issued_at),
        issued_at + Duration::from_millis(900)
    );
}

#[test]
fn a_skew_that_leaves_no_lease_to_work_in_is_refused() {
    let base = WorkerConfig {
        lease_ms: LEASE_MS,
        ..WorkerConfig::default()
    };
    let whole_lease = WorkerConfig {
        max_clock_skew_ms: Some(LEASE_MS),
        ..base.clone()
    };
    assert_eq!(
        whole_lease.validate(),
        Err(WorkerConfigError::ClockSkewNotBelowLease {
            max_clock_skew_ms: LEASE_MS,
            lease_ms: LEASE_MS,
        })
    );
    // The first extend (at lease / 3) would be due after the local deadline (lease − 800).
    let no_time_to_extend = WorkerConfig {
        max_clock_skew_ms: Some(800),
        ..base
    };
    assert_eq!(
        no_time_to_extend.validate(),
        Err(WorkerConfigError::ExtendAfterLocalDeadline {
            extend_every_ms: LEASE_MS / 3,
            local_deadline_ms: LEASE_MS - 800,
        })
    );
}
