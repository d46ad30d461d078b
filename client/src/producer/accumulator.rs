//! Per-partition batch building: which records go together, and when a batch is ready.
//!
//! A batch is ready when
//! * adding the next record would take it past `max_batch_bytes` (it is closed first, and the
//!   record opens the next batch), or its records reached `max_batch_bytes`;
//! * its linger deadline passed — `linger` after its **first** record, fixed when the batch
//!   opens and never moved by later records;
//! * the producer flushes.
//!
//! The accumulator is shared: every `send` appends under the producer's mutex, and the
//! producer's task takes ready batches out. So that the lock is held for nanoseconds and the
//! task is woken once per *batch* rather than once per record, [`Accumulator::append`] reports
//! whether the task has anything new to look at: a batch was closed, or one was opened (a new
//! linger deadline).
//!
//! Pure and clock-free (the caller passes `now`), so the rules are tested without sleeping.
//! `B` is whatever the caller keeps per batch (the producer keeps the batch's outcome and its
//! share of the buffer); it is created with `B::default()` when a batch opens and comes back
//! with the batch.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use booblik_protocol::{RecordSet, RecordSetBuilder};
use tokio::time::Instant;

/// A closed batch of one partition, ready to send.
#[derive(Debug)]
pub(crate) struct ReadyBatch<B> {
    /// Its partition.
    pub(crate) partition: i32,
    /// The records, in append order.
    pub(crate) records: RecordSet,
    /// What the caller attached to the batch.
    pub(crate) state: B,
}

/// What one [`Accumulator::append`] did.
#[derive(Debug)]
pub(crate) struct Appended<R> {
    /// What the caller's `attach` returned for this record.
    pub(crate) attached: R,
    /// True when a batch was closed or opened by this append: the task must look again (to send
    /// the closed batch, or to arm the linger timer for the new deadline).
    pub(crate) wake_task: bool,
}

#[derive(Debug)]
struct OpenBatch<B> {
    builder: RecordSetBuilder,
    state: B,
    deadline: Instant,
}

/// Open batches (one per partition at most) and closed batches not yet taken, oldest first.
#[derive(Debug)]
pub(crate) struct Accumulator<B> {
    open: BTreeMap<i32, OpenBatch<B>>,
    /// Per partition, the size its last batch reached: a new batch is given that much room at
    /// once. Grown by doubling instead, a 1 MiB batch would be re-allocated and copied five
    /// times over (64 KiB … 1 MiB), each time on fresh pages; under a trickle the last batch
    /// was small, so idle partitions do not hold large buffers.
    capacity_hints: BTreeMap<i32, usize>,
    closed: VecDeque<ReadyBatch<B>>,
    linger: Duration,
    max_batch_bytes: usize,
}

impl<B: Default> Accumulator<B> {
    pub(crate) fn new(linger: Duration, max_batch_bytes: usize) -> Self {
        Self {
            open: BTreeMap::new(),
            capacity_hints: BTreeMap::new(),
            closed: VecDeque::new(),
            linger,
            max_batch_bytes,
        }
    }

    /// Adds a non-empty record to its partition's open batch, opening one (deadline `now()` +
    /// linger) if there is none. `attach` is given the batch's state and the record's index in
    /// the batch, before the batch can close.
    ///
    /// `now` is only called when a batch opens: reading the clock once per batch, not once per
    /// record.
    ///
    /// # Panics
    /// On an empty payload or one above `MAX_RECORD_PAYLOAD_BYTES`: the producer refuses those
    /// before they get here.
    pub(crate) fn append<R>(
        &mut self,
        partition: i32,
        payload: &[u8],
        now: impl FnOnce() -> Instant,
        attach: impl FnOnce(&mut B, usize) -> R,
    ) -> Appended<R> {
        let record_wire_bytes = 4 + payload.len();
        let mut wake_task = false;
        if let Some(open) = self.open.get(&partition)
            && open.builder.wire_bytes() + record_wire_bytes > self.max_batch_bytes
        {
            self.close(partition);
            wake_task = true;
        }
        let open = match self.open.entry(partition) {
            std::collections::btree_map::Entry::Occupied(open) => open.into_mut(),
            std::collections::btree_map::Entry::Vacant(vacant) => {
                wake_task = true;
                let hint = self.capacity_hints.get(&partition).copied().unwrap_or(0);
                // At least this record, at most a batch (a single larger record goes alone).
                let capacity = hint.min(self.max_batch_bytes).max(record_wire_bytes);
                vacant.insert(OpenBatch {
                    builder: RecordSetBuilder::with_capacity(capacity),
                    state: B::default(),
                    deadline: now() + self.linger,
                })
            }
        };
        let index = open.builder.count();
        open.builder
            .push(payload)
            .expect("empty and oversized records are refused before they reach the accumulator");
        let attached = attach(&mut open.state, index);
        if open.builder.wire_bytes() >= self.max_batch_bytes {
            self.close(partition);
            wake_task = true;
        }
        Appended {
            attached,
            wake_task,
        }
    }

    /// The earliest linger deadline of the open batches.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.open.values().map(|b| b.deadline).min()
    }

    /// Takes the closed batches, then closes and takes every batch whose deadline is at or
    /// before `now`. Batches of one partition come out in the order they were closed.
    pub(crate) fn take_ready(&mut self, now: Instant) -> Vec<ReadyBatch<B>> {
        let expired: Vec<i32> = self
            .open
            .iter()
            .filter(|(_, b)| b.deadline <= now)
            .map(|(p, _)| *p)
            .collect();
        for partition in expired {
            self.close(partition);
        }
        self.closed.drain(..).collect()
    }

    /// Closes every open batch and takes every batch.
    pub(crate) fn take_all(&mut self) -> Vec<ReadyBatch<B>> {
        let partitions: Vec<i32> = self.open.keys().copied().collect();
        for partition in partitions {
            self.close(partition);
        }
        self.closed.drain(..).collect()
    }

    fn close(&mut self, partition: i32) {
        if let Some(open) = self.open.remove(&partition) {
            self.capacity_hints
                .insert(partition, open.builder.wire_bytes());
            self.closed.push_back(ReadyBatch {
                partition,
                records: open
                    .builder
                    .finish()
                    .expect("an open batch holds at least one record"),
                state: open.state,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINGER: Duration = Duration::from_millis(100);

    /// Appends `payload` with `ticket`, recording the ticket in the batch's state.
    fn append(
        acc: &mut Accumulator<Vec<i32>>,
        partition: i32,
        payload: &[u8],
        ticket: i32,
        now: Instant,
    ) -> Appended<usize> {
        acc.append(
            partition,
            payload,
            || now,
            |tickets, index| {
                tickets.push(ticket);
                index
            },
        )
    }

    #[test]
    fn the_linger_deadline_is_measured_from_the_first_record() {
        let mut acc = Accumulator::new(LINGER, 1024);
        let t0 = Instant::now();
        append(&mut acc, 0, b"first", 1, t0);
        append(&mut acc, 0, b"second", 2, t0 + Duration::from_millis(90));
        assert_eq!(
            acc.next_deadline(),
            Some(t0 + LINGER),
            "a later record moved the deadline"
        );
        assert!(acc.take_ready(t0 + Duration::from_millis(99)).is_empty());
        let ready = acc.take_ready(t0 + LINGER);
        assert_eq!(ready.len(), 1);
        assert_eq!(ready[0].state, vec![1, 2]);
        assert_eq!(acc.next_deadline(), None);
    }

    #[test]
    fn with_zero_linger_a_batch_is_ready_the_moment_it_opens() {
        // What lets the producer send without waiting for a timer when `linger_ms = 0`.
        let mut acc = Accumulator::new(Duration::ZERO, 1024);
        let now = Instant::now();
        append(&mut acc, 0, b"first", 1, now);
        assert_eq!(acc.next_deadline(), Some(now));
        let ready = acc.take_ready(now);
        assert_eq!(ready.len(), 1);
        assert_eq!(ready[0].state, vec![1]);
    }

    #[test]
    fn records_get_consecutive_indexes_within_their_batch() {
        let mut acc = Accumulator::new(LINGER, 1024);
        let now = Instant::now();
        let indexes: Vec<usize> = (0..3)
            .map(|t| append(&mut acc, 0, b"r", t, now).attached)
            .collect();
        assert_eq!(indexes, vec![0, 1, 2]);
        assert_eq!(append(&mut acc, 1, b"r", 9, now).attached, 0);
    }

    #[test]
    fn the_task_is_woken_once_per_batch_not_once_per_record() {
        // Each 6-byte payload takes 10 bytes with its size field: three fit, the fourth closes.
        let mut acc = Accumulator::new(LINGER, 30);
        let now = Instant::now();
        let wakes: Vec<bool> = (0..4)
            .map(|t| append(&mut acc, 0, b"aaaaaa", t, now).wake_task)
            .collect();
        // The first opens the batch, the third fills it (closing it), the fourth opens the next.
        assert_eq!(wakes, vec![true, false, true, true]);
    }

    #[test]
    fn a_new_batch_gets_the_room_its_partitions_last_batch_took() {
        let mut acc = Accumulator::new(LINGER, 1024);
        let now = Instant::now();
        for ticket in 0..10 {
            append(&mut acc, 0, &[7; 96], ticket, now);
        }
        let first = acc.take_all();
        let filled = first[0].records.wire_bytes().len();
        assert_eq!(filled, 1000);
        append(&mut acc, 0, b"x", 10, now);
        assert!(
            acc.open[&0].builder.capacity() >= filled,
            "the batch starts small again"
        );
        // Another partition has no history: room for its first record only.
        append(&mut acc, 1, b"x", 11, now);
        assert!(acc.open[&1].builder.capacity() < filled);
    }

    #[test]
    fn a_batch_is_ready_when_it_reaches_max_batch_bytes() {
        let mut acc = Accumulator::new(LINGER, 20);
        let now = Instant::now();
        append(&mut acc, 0, b"aaaaaa", 1, now);
        append(&mut acc, 0, b"bbbbbb", 2, now);
        assert_eq!(acc.next_deadline(), None);
        let ready = acc.take_ready(now);
        assert_eq!(ready.len(), 1);
        assert_eq!(ready[0].records.count(), 2);
    }

    #[test]
    fn a_record_that_would_overflow_closes_the_batch_and_opens_the_next() {
        let mut acc = Accumulator::new(LINGER, 25);
        let t0 = Instant::now();
        append(&mut acc, 0, b"aaaaaa", 1, t0);
        append(&mut acc, 0, b"bbbbbb", 2, t0);
        let t1 = t0 + Duration::from_millis(10);
        let appended = append(&mut acc, 0, b"cccccc", 3, t1);
        assert_eq!(appended.attached, 0, "the record opened a new batch");
        assert_eq!(acc.next_deadline(), Some(t1 + LINGER));
        let ready = acc.take_ready(t1);
        assert_eq!(ready.len(), 1);
        assert_eq!(ready[0].state, vec![1, 2]);
    }

    #[test]
    fn a_record_larger_than_a_batch_goes_alone() {
        let mut acc = Accumulator::new(LINGER, 8);
        let now = Instant::now();
        append(&mut acc, 0, b"a", 1, now);
        append(&mut acc, 0, b"much too large", 2, now);
        let ready = acc.take_ready(now);
        assert_eq!(ready.len(), 2);
        assert_eq!(ready[0].state, vec![1]);
        assert_eq!(ready[1].state, vec![2]);
    }

    #[test]
    fn batches_of_one_partition_are_taken_in_the_order_they_closed() {
        let mut acc = Accumulator::new(LINGER, 20);
        let t0 = Instant::now();
        for ticket in 0..5 {
            append(&mut acc, 0, b"aaaaaa", ticket, t0);
        }
        // Two full batches closed; the fifth record's batch expires with the linger.
        let ready = acc.take_ready(t0 + LINGER);
        let tickets: Vec<Vec<i32>> = ready.into_iter().map(|b| b.state).collect();
        assert_eq!(tickets, vec![vec![0, 1], vec![2, 3], vec![4]]);
    }

    #[test]
    fn partitions_batch_independently_and_flush_takes_all() {
        let mut acc = Accumulator::new(LINGER, 1024);
        let now = Instant::now();
        append(&mut acc, 0, b"a", 1, now);
        append(&mut acc, 1, b"b", 2, now);
        append(&mut acc, 0, b"c", 3, now);
        let all = acc.take_all();
        assert_eq!(all.len(), 2);
        assert_eq!((all[0].partition, all[0].state.clone()), (0, vec![1, 3]));
        assert_eq!((all[1].partition, all[1].state.clone()), (1, vec![2]));
        assert_eq!(acc.next_deadline(), None);
    }
}
