//! Adopting a lease of one's own: the edge case of a claim whose acknowledgement was lost.
//!
//! A claim append can fail *after* the broker wrote the record (the connection broke before the
//! answer came). The claim may then have won, and the worker, not knowing, claims the task again
//! and loses — to itself: the verdict says the task is `AlreadyLeased` by this worker's id. If
//! the worker walked away, the lease would only lapse and the task wait `lease_ms` for nothing;
//! so it adopts the lease and works under the earlier claim's token. It must be sure the claim is
//! really *this run's*: another process running with the same worker id (a mistake, but one that
//! happens) would otherwise put two workers on one token. So a lease is adopted only if
//!
//! * its claim is at or after this run's start in the claims log (`own_from`), and
//! * this run saw a claim append for that very task fail, and
//! * this run has not given the token up already (walked away from it: see below).
//!
//! Its grant time is unknown, so the local lease deadline runs from the earliest failed append
//! for the task (no later than the claim's own timestamp), and the worker extends at once.
//!
//! This file is the whole of it: the worker's claim path asks [`UnacknowledgedClaims::adopt`]
//! one question when its claim lost to its own id, and otherwise never looks here.

use std::collections::VecDeque;
use std::time::Instant;

use uuid::Uuid;

/// Claim appends that failed remembered at most (their task ids): a failed append may still
/// have been written and won, and only such a claim's lease may be adopted later.
pub const MAX_UNACKNOWLEDGED_CLAIMS: usize = 1_024;

/// Claims of this run whose append failed: their fate is unknown — written and winning, for all
/// the worker knows. The one question asked of them: may a lease held under this worker's id be
/// adopted as this run's own? Also the tokens this run gave up: a lease the worker walked away
/// from (its local deadline passed, its done was fenced or never appended) may still be alive in
/// the log — an extend whose append "failed" may have been written — and its real expiry is
/// unknown, so it is never adopted again; it lapses and the task is claimed anew.
#[derive(Debug, Default)]
pub(super) struct UnacknowledgedClaims {
    /// `(task, when the append was issued)`, oldest first, at most [`MAX_UNACKNOWLEDGED_CLAIMS`].
    claims: VecDeque<(Uuid, Instant)>,
    /// Tokens this run gave up, oldest first, at most [`MAX_UNACKNOWLEDGED_CLAIMS`].
    given_up: VecDeque<i64>,
}

impl UnacknowledgedClaims {
    /// Notes a failed claim append on `task_id` issued at `issued_at` (forgetting the oldest
    /// note beyond [`MAX_UNACKNOWLEDGED_CLAIMS`]).
    pub(super) fn remember(&mut self, task_id: Uuid, issued_at: Instant) {
        if self.claims.len() >= MAX_UNACKNOWLEDGED_CLAIMS {
            self.claims.pop_front();
        }
        self.claims.push_back((task_id, issued_at));
    }

    /// Notes that this run stopped working under `token` without an accepted done.
    pub(super) fn given_up(&mut self, token: i64) {
        if self.given_up.len() >= MAX_UNACKNOWLEDGED_CLAIMS {
            self.given_up.pop_front();
        }
        self.given_up.push_back(token);
    }

    /// If the claim at `holder_token` on `task_id` can be one this run wrote — at or after
    /// `own_from` (the claims position where this run started), on a task whose claim append this
    /// run saw fail — when the earliest such append was issued: the conservative start of its
    /// lease. `None`: the claim is not this run's, and its lease must not be adopted.
    pub(super) fn adoptable(
        &self,
        task_id: Uuid,
        holder_token: i64,
        own_from: i64,
    ) -> Option<Instant> {
        if holder_token < own_from || self.given_up.contains(&holder_token) {
            return None;
        }
        self.claims
            .iter()
            .find(|(task, _)| *task == task_id)
            .map(|(_, issued_at)| *issued_at)
    }

    /// The verdict on a claim of this worker said `AlreadyLeased` by this worker's own id, under
    /// `holder_token`: the conservative start of the lease if it may be adopted, else `None`
    /// (logged as an error: another process is probably running with the same worker id).
    pub(super) fn adopt(
        &self,
        worker_id: Uuid,
        task_id: Uuid,
        holder_token: i64,
        own_from: i64,
    ) -> Option<Instant> {
        let adoptable = self.adoptable(task_id, holder_token, own_from);
        if adoptable.is_none() {
            tracing::error!(
                %worker_id,
                %task_id,
                holder_token,
                own_from,
                "a claim under this worker id that this run did not write holds the task: \
                 is another process running with the same worker id?"
            );
        }
        adoptable
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const OWN_FROM: i64 = 100;

    #[test]
    fn only_a_claim_this_run_may_have_written_is_adopted() {
        let (mine, other) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let issued_at = Instant::now();
        let mut claims = UnacknowledgedClaims::default();
        claims.remember(mine, issued_at);
        assert_eq!(
            claims.adoptable(mine, OWN_FROM + 5, OWN_FROM),
            Some(issued_at)
        );
        // Written before this run started: an earlier run's, or another process's.
        assert_eq!(claims.adoptable(mine, OWN_FROM - 1, OWN_FROM), None);
        // A task whose claim append never failed in this run: another process's claim.
        assert_eq!(claims.adoptable(other, OWN_FROM + 5, OWN_FROM), None);
    }

    #[test]
    fn a_lease_this_run_gave_up_is_never_adopted_again() {
        let task = Uuid::from_u128(1);
        let mut claims = UnacknowledgedClaims::default();
        claims.remember(task, Instant::now());
        assert!(claims.adoptable(task, OWN_FROM + 5, OWN_FROM).is_some());
        claims.given_up(OWN_FROM + 5);
        assert_eq!(claims.adoptable(task, OWN_FROM + 5, OWN_FROM), None);
        // Another token on the same task (a later claim of this run) still can be.
        assert!(claims.adoptable(task, OWN_FROM + 9, OWN_FROM).is_some());
    }

    #[test]
    fn the_earliest_failed_append_bounds_the_adopted_lease() {
        let task = Uuid::from_u128(1);
        let first = Instant::now();
        let later = first + Duration::from_millis(50);
        let mut claims = UnacknowledgedClaims::default();
        claims.remember(task, first);
        claims.remember(task, later);
        assert_eq!(claims.adoptable(task, OWN_FROM, OWN_FROM), Some(first));
    }

    #[test]
    fn the_oldest_note_is_forgotten_beyond_the_cap() {
        let now = Instant::now();
        let mut claims = UnacknowledgedClaims::default();
        for n in 0..=MAX_UNACKNOWLEDGED_CLAIMS {
            claims.remember(Uuid::from_u128(n as u128), now);
        }
        assert_eq!(
            claims.adoptable(Uuid::from_u128(0), OWN_FROM, OWN_FROM),
            None
        );
        assert!(
            claims
                .adoptable(Uuid::from_u128(1), OWN_FROM, OWN_FROM)
                .is_some()
        );
    }
}
