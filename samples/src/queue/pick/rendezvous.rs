//! Rendezvous hashing: each worker its own order of the candidates, with no coordination.
//!
//! Every idle worker sees the same claimable set. `Random` spreads them over it, but two of them
//! still draw the same task with probability about 1/B per pair, and when a task arrives into an
//! idle queue (a trickle) every one of them goes for it. Rendezvous hashing gives each task an
//! *owner*: among the idle live workers ([`QueueState`](crate::queue::state::QueueState) knows
//! them from the log, `state/liveness.rs`), the one with the highest [`weight`] of
//! `(task, worker)`. Every worker computes the same owner from the same view, so a worker that
//! claims only tasks it owns never collides with another that does the same.
//!
//! The cost stays bounded: a pick looks at no more than [`RENDEZVOUS_SCAN`] candidates (from a
//! random position, so workers do not all start at the same end) and ranks each over the idle
//! workers: O(scan × idle workers) hashes, never a pass over the backlog. If none of the scanned
//! candidates is its own, the pick returns the one where the worker ranks best, marked as not
//! ranked first; the worker then *defers* — waits a bounded time for the owner to claim it —
//! before claiming it anyway (`worker/run.rs`, [`RENDEZVOUS_MAX_DEFERENCE_MS`]).
//!
//! # A backlog ranks over every live worker
//!
//! Idle workers are the right owners when tasks are scarce (a trickle): a busy worker will not
//! claim for a while, and a task left to it would wait. In a backlog every live worker claims
//! again as soon as it finishes, and a worker that sends a finished task's done together with
//! its next claim holds a lease in the log at every moment: it never looks idle. Ranked over the
//! idle workers alone, every worker then ranks first for every task, and rendezvous picks
//! collide as `Random` does (30 workers with no work: 2.8–3.3 % lost races against random's
//! 3.4–3.9 %, `docs/experiments/task-queue.md`). So when the claimable tasks number at least
//! [`RENDEZVOUS_BACKLOG_PER_WORKER`] per live worker, [`choose_in_backlog`] ranks over the live
//! workers, busy or not, and scans up to [`RENDEZVOUS_BACKLOG_SCAN`] candidates: enough that a
//! worker almost never finds none of its own and defers. Fewer candidates, and no other worker
//! looks idle (the last tasks of such a backlog), rank over the live workers too, with the
//! usual deference: the owner is about to claim. Only when some other worker looks idle do the
//! idle ones own the tasks. The rule stays a guess where views differ: a worker that deferred
//! and sent its done alone looks idle to the others while one holding its lease counts itself,
//! so their ranks can disagree for the last few tasks
//! (`samples/tests/queue_rendezvous_pick_leaves_workers_almost_no_lost_races.rs`).
//!
//! [`RENDEZVOUS_MAX_DEFERENCE_MS`]: crate::queue::worker::RENDEZVOUS_MAX_DEFERENCE_MS

use rand::Rng;
use uuid::Uuid;

use crate::queue::state::Candidates;

/// Candidates a rendezvous pick ranks at most. With `k` idle workers a candidate is a worker's
/// own with probability 1/k, so a scan of this many misses every own task with probability
/// (1 − 1/k)^64: about 0.03 % at 8 workers, 12 % at 30, after which the worker defers.
pub const RENDEZVOUS_SCAN: usize = 64;

/// Claimable tasks per live worker from which the queue counts as a backlog, ranked over every
/// live worker ([`choose_in_backlog`]). With `k` live workers and at least 8·k candidates, a
/// scan of [`RENDEZVOUS_BACKLOG_SCAN`] (or of all of them, when fewer) misses every own task with
/// probability at most (1 − 1/k)^(8·k) < e^−8 ≈ 0.03 %.
pub const RENDEZVOUS_BACKLOG_PER_WORKER: usize = 8;

/// Candidates a backlog pick ranks at most: with 30 live workers a scan this long misses every
/// own task with probability (29/30)^256 ≈ 0.02 %. Each candidate that is not the worker's own
/// costs about two hashes ([`ranks_first`] stops at the first worker ranked above), so a pick
/// costs O(live workers) hashes on average.
pub const RENDEZVOUS_BACKLOG_SCAN: usize = 256;

/// What a rendezvous pick chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ranked {
    /// The task.
    pub task_id: Uuid,
    /// Whether the picking worker ranks first for it among the idle live workers (it owns the
    /// task); otherwise another worker does, and the picker should defer before claiming.
    pub ranked_first: bool,
}

/// The rendezvous weight of `(task, worker)`: a fixed hash (FNV-1a over both ids, then a
/// SplitMix64 finaliser to spread the bits), the same in every process and every build — unlike
/// `std`'s hasher, whose algorithm may change between Rust releases.
pub fn weight(task_id: Uuid, worker_id: Uuid) -> u64 {
    const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = FNV_OFFSET;
    for byte in task_id.as_bytes().iter().chain(worker_id.as_bytes()) {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash ^= hash >> 30;
    hash = hash.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash ^= hash >> 27;
    hash = hash.wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

/// What orders the workers for `task_id`: the weight, ties going to the higher worker id, so
/// every worker breaks them alike.
fn rank(task_id: Uuid, worker_id: Uuid) -> (u64, Uuid) {
    (weight(task_id, worker_id), worker_id)
}

/// Whether no worker of `workers` (other than `me`) ranks above `me` for `task_id`; stops at the
/// first that does.
fn ranks_first(task_id: Uuid, me: Uuid, workers: &[Uuid]) -> bool {
    let mine = rank(task_id, me);
    !workers
        .iter()
        .any(|&other| other != me && rank(task_id, other) > mine)
}

/// How many of `idle` (other than `me`) rank above `me` for `task_id`.
fn workers_ranked_above(task_id: Uuid, me: Uuid, idle: &[Uuid]) -> usize {
    let mine = rank(task_id, me);
    idle.iter()
        .filter(|&&other| other != me && rank(task_id, other) > mine)
        .count()
}

/// Where a pick's scan starts: a random position, so workers do not all start at the same end.
/// `None` if there are no candidates.
fn scan_start<R: Rng + ?Sized>(candidates: &Candidates<'_>, rng: &mut R) -> Option<usize> {
    let len = candidates.len();
    (len > 0).then(|| rng.random_range(0..len))
}

/// Chooses among `candidates` for worker `me`, ranking over `idle` (the idle live workers;
/// `me` counts whether listed or not). `None` if there are no candidates.
pub fn choose<R: Rng + ?Sized>(
    candidates: &Candidates<'_>,
    me: Uuid,
    idle: &[Uuid],
    rng: &mut R,
) -> Option<Ranked> {
    let start = scan_start(candidates, rng)?;
    let mut best: Option<(usize, Uuid)> = None;
    for task_id in candidates.window(start, RENDEZVOUS_SCAN) {
        let above = workers_ranked_above(task_id, me, idle);
        if above == 0 {
            return Some(Ranked {
                task_id,
                ranked_first: true,
            });
        }
        if best.is_none_or(|(best_above, _)| above < best_above) {
            best = Some((above, task_id));
        }
    }
    best.map(|(_, task_id)| Ranked {
        task_id,
        ranked_first: false,
    })
}

/// Chooses among `candidates` in a backlog (module docs), ranking over `live` (every live
/// worker, busy or idle; `me` counts whether listed or not): the first of up to
/// [`RENDEZVOUS_BACKLOG_SCAN`] scanned candidates that `me` ranks first; if none is, the pick
/// over the same candidates that [`choose`] makes (the best-ranked, to defer on). `None` if there
/// are no candidates.
pub fn choose_in_backlog<R: Rng + ?Sized>(
    candidates: &Candidates<'_>,
    me: Uuid,
    live: &[Uuid],
    rng: &mut R,
) -> Option<Ranked> {
    let start = scan_start(candidates, rng)?;
    candidates
        .window(start, RENDEZVOUS_BACKLOG_SCAN)
        .find(|&task_id| ranks_first(task_id, me, live))
        .map(|task_id| Ranked {
            task_id,
            ranked_first: true,
        })
        .or_else(|| choose(candidates, me, live, rng))
}
