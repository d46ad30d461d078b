//! The connection limit, and which connection gives way when it is reached.
//!
//! At most `max_connections` sessions are open. When a new connection arrives at the limit, the
//! broker closes its **longest-idle** connection to admit it; only when no connection is idle is
//! the new one closed at once. Idle means no request in flight and nothing unsent: a parked long
//! poll or a FORCED PRODUCE waiting for its fsync is in flight, so it is never evicted. Without
//! this, sockets that connect and send nothing lock every new client out until the idle timeout
//! (ten minutes by default) closes them.
//!
//! Each session has a [`ConnectionSlot`] whose state is one atomic word: busy, idle since an
//! instant, or evicted. The accept loop evicts by swapping "idle since t" for "evicted" (a
//! compare-and-swap); a session turns busy by swapping "idle" for "busy" before it applies a
//! request. Exactly one of the two wins, so a connection is never evicted with a request applied,
//! and a request read just as its connection was evicted is dropped unapplied, as if the close
//! had come first.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tracing::warn;

use super::metrics as m;

/// Slot state: a request in flight or an answer unsent.
const BUSY: u64 = 0;
/// Slot state: closed by the accept loop to admit a newer connection.
const EVICTED: u64 = u64::MAX;

/// The open connections: at most `max` at once.
#[derive(Debug)]
pub(crate) struct Connections {
    max: usize,
    /// Idle instants are stored as nanoseconds since this instant, plus one (0 is [`BUSY`]).
    epoch: Instant,
    slots: Mutex<Slots>,
}

#[derive(Debug, Default)]
struct Slots {
    next_id: u64,
    open: HashMap<u64, Arc<ConnectionSlot>>,
}

/// One open connection's state, shared by its session and the accept loop.
#[derive(Debug)]
pub(crate) struct ConnectionSlot {
    peer: SocketAddr,
    epoch: Instant,
    state: AtomicU64,
    evicted: Notify,
}

/// A session's place among the open connections; dropping it frees the place.
#[derive(Debug)]
pub(crate) struct Admitted {
    id: u64,
    slot: Arc<ConnectionSlot>,
    connections: Arc<Connections>,
}

impl Connections {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            max,
            epoch: Instant::now(),
            slots: Mutex::new(Slots::default()),
        }
    }

    /// A place for a connection from `peer`, evicting the longest-idle connection if all `max`
    /// are taken; `None` when they are all busy.
    ///
    /// Finding the longest-idle one scans the open connections (at most `max`): this runs only
    /// at the limit, once per new connection, and a scan of a few thousand atomics costs
    /// microseconds.
    pub(crate) fn admit(self: &Arc<Self>, peer: SocketAddr) -> Option<Admitted> {
        let mut slots = self.lock();
        if slots.open.len() >= self.max {
            let now = Instant::now();
            let (victim, idle_since) = slots
                .open
                .iter()
                .filter_map(|(id, slot)| {
                    let state = slot.state.load(Ordering::Acquire);
                    (state != BUSY && state != EVICTED).then_some((*id, state))
                })
                .min_by_key(|&(_, state)| state)?;
            let slot = Arc::clone(&slots.open[&victim]);
            // Fails when the session turned busy since the load: then it is not idle any more,
            // and the new connection is turned away rather than evicting a busy one.
            slot.state
                .compare_exchange(idle_since, EVICTED, Ordering::AcqRel, Ordering::Acquire)
                .ok()?;
            slots.open.remove(&victim);
            slot.evicted.notify_one();
            metrics::counter!(m::CONNECTIONS_EVICTED).increment(1);
            let idle_ms = now
                .saturating_duration_since(slot.instant(idle_since))
                .as_millis();
            warn!(
                evicted = %slot.peer,
                idle_ms,
                admitted = %peer,
                max_connections = self.max,
                "connection limit reached; closing the longest-idle connection"
            );
        }
        let id = slots.next_id;
        slots.next_id += 1;
        let slot = Arc::new(ConnectionSlot {
            peer,
            epoch: self.epoch,
            state: AtomicU64::new(BUSY),
            evicted: Notify::new(),
        });
        slot.idle();
        slots.open.insert(id, Arc::clone(&slot));
        Some(Admitted {
            id,
            slot,
            connections: Arc::clone(self),
        })
    }

    /// Connections open now.
    pub(crate) fn open(&self) -> usize {
        self.lock().open.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Admitted {
    pub(crate) fn slot(&self) -> &ConnectionSlot {
        &self.slot
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        // An evicted slot was removed when it was evicted (and its id is never reused).
        self.connections.lock().open.remove(&self.id);
    }
}

impl ConnectionSlot {
    /// The session is about to apply a request. False when the connection was evicted: the
    /// request must not be applied, and the session ends.
    pub(crate) fn busy(&self) -> bool {
        self.state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |state| {
                (state != EVICTED).then_some(BUSY)
            })
            .is_ok()
    }

    /// Every request applied so far is answered and its answer written: idle from now.
    pub(crate) fn idle(&self) {
        let since = u64::try_from(self.epoch.elapsed().as_nanos())
            .unwrap_or(EVICTED - 1)
            .saturating_add(1)
            .min(EVICTED - 1);
        let _ = self
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |state| {
                (state != EVICTED).then_some(since)
            });
    }

    /// Returns once the accept loop evicted this connection.
    pub(crate) async fn evicted(&self) {
        self.evicted.notified().await;
    }

    fn instant(&self, state: u64) -> Instant {
        self.epoch + Duration::from_nanos(state - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[test]
    fn at_the_limit_the_longest_idle_connection_gives_way_and_busy_ones_never_do() {
        let connections = Arc::new(Connections::new(3));
        let oldest = connections.admit(peer(1)).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        let busy = connections.admit(peer(2)).unwrap();
        assert!(busy.slot().busy());
        let newer = connections.admit(peer(3)).unwrap();
        // Oldest idle first, although the busy one was admitted before the newer idle one.
        let fourth = connections.admit(peer(4)).unwrap();
        assert!(
            !oldest.slot().busy(),
            "the longest-idle connection is evicted"
        );
        assert!(newer.slot().busy());
        assert!(fourth.slot().busy());
        // Everyone left is busy: the next connection is turned away.
        assert!(connections.admit(peer(5)).is_none());
        // One turns idle again: it gives way next.
        newer.slot().idle();
        let sixth = connections.admit(peer(6)).unwrap();
        assert!(!newer.slot().busy());
        drop(oldest);
        drop(newer);
        assert_eq!(connections.lock().open.len(), 3);
        drop(sixth);
        assert_eq!(connections.lock().open.len(), 2);
    }

    #[test]
    fn a_dropped_connection_frees_its_place() {
        let connections = Arc::new(Connections::new(1));
        let first = connections.admit(peer(1)).unwrap();
        assert!(first.slot().busy());
        assert!(connections.admit(peer(2)).is_none());
        drop(first);
        assert!(connections.admit(peer(3)).is_some());
    }
}
