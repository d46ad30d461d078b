//! Per-partition batch building: which records go together, and when a batch is ready.
//!
//! A batch is ready when
//! * adding the next record would take it past `max_batch_bytes` (it is closed first, and the
//!   record opens the next batch), or its records reached `max_batch_bytes`;
//! * its linger deadline passed — `linger` after its **first** record, fixed when the batch
//!   opens and never moved by later records;
//! * the producer flushes.
//!
//! Pure and clock-free (the caller passes `now`), so the rules are tested without sleeping.
//! `T` is whatever the caller attaches to each record (the producer's delivery ticket); it comes
//! back with the batch in record order.

use std::collections::BTreeMap;
use std::time::Duration;

use booblik_protocol::{RecordSet, RecordSetBuilder};
use tokio::time::Instant;

/// A closed batch of one partition, ready to send.
#[derive(Debug)]
pub(crate) struct ReadyBatch<T> {
    /// Its partition.
    pub(crate) partition: i32,
    /// The records, in append order.
    pub(crate) records: RecordSet,
    /// One ticket per record, in the same order.
    pub(crate) tickets: Vec<T>,
}

#[derive(Debug)]
struct OpenBatch<T> {
    builder: RecordSetBuilder,
    tickets: Vec<T>,
    deadline: Instant,
}

/// Open batches, one per partition at most.
#[derive(Debug)]
pub(crate) struct Accumulator<T> {
    open: BTreeMap<i32, OpenBatch<T>>,
    linger: Duration,
    max_batch_bytes: usize,
}

impl<T> Accumulator<T> {
    pub(crate) fn new(linger: Duration, max_batch_bytes: usize) -> Self {
        Self {
            open: BTreeMap::new(),
            linger,
            max_batch_bytes,
        }
    }

    /// Adds a non-empty record; returns the batches this made ready, oldest first.
    ///
    /// # Panics
    /// On an empty payload: the producer refuses those before they get here.
    pub(crate) fn append(
        &mut self,
        partition: i32,
        payload: &[u8],
        ticket: T,
        now: Instant,
    ) -> Vec<ReadyBatch<T>> {
        let mut ready = Vec::new();
        let record_wire_bytes = 4 + payload.len();
        if let Some(open) = self.open.get(&partition)
            && open.builder.wire_bytes() + record_wire_bytes > self.max_batch_bytes
        {
            ready.extend(self.close(partition));
        }
        let linger = self.linger;
        let open = self.open.entry(partition).or_insert_with(|| OpenBatch {
            builder: RecordSetBuilder::new(),
            tickets: Vec::new(),
            deadline: now + linger,
        });
        open.builder
            .push(payload)
            .expect("empty records are refused before they reach the accumulator");
        open.tickets.push(ticket);
        if open.builder.wire_bytes() >= self.max_batch_bytes {
            ready.extend(self.close(partition));
        }
        ready
    }

    /// The earliest linger deadline of the open batches.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.open.values().map(|b| b.deadline).min()
    }

    /// Closes every batch whose deadline is at or before `now`.
    pub(crate) fn take_expired(&mut self, now: Instant) -> Vec<ReadyBatch<T>> {
        let expired: Vec<i32> = self
            .open
            .iter()
            .filter(|(_, b)| b.deadline <= now)
            .map(|(p, _)| *p)
            .collect();
        expired.into_iter().filter_map(|p| self.close(p)).collect()
    }

    /// Closes every open batch.
    pub(crate) fn take_all(&mut self) -> Vec<ReadyBatch<T>> {
        let partitions: Vec<i32> = self.open.keys().copied().collect();
        partitions
            .into_iter()
            .filter_map(|p| self.close(p))
            .collect()
    }

    fn close(&mut self, partition: i32) -> Option<ReadyBatch<T>> {
        let open = self.open.remove(&partition)?;
        Some(ReadyBatch {
            partition,
            records: open
                .builder
                .finish()
                .expect("an open batch holds at least one record"),
            tickets: open.tickets,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINGER: Duration = Duration::from_millis(100);

    #[test]
    fn the_linger_deadline_is_measured_from_the_first_record() {
        let mut acc = Accumulator::new(LINGER, 1024);
        let t0 = Instant::now();
        assert!(acc.append(0, b"first", 1, t0).is_empty());
        assert!(
            acc.append(0, b"second", 2, t0 + Duration::from_millis(90))
                .is_empty()
        );
        assert_eq!(
            acc.next_deadline(),
            Some(t0 + LINGER),
            "a later record moved the deadline"
        );
        assert!(acc.take_expired(t0 + Duration::from_millis(99)).is_empty());
        let ready = acc.take_expired(t0 + LINGER);
        assert_eq!(ready.len(), 1);
        assert_eq!(ready[0].tickets, vec![1, 2]);
        assert_eq!(acc.next_deadline(), None);
    }

    #[test]
    fn a_batch_is_ready_when_it_reaches_max_batch_bytes() {
        // Each 6-byte payload takes 10 bytes with its size field.
        let mut acc = Accumulator::new(LINGER, 20);
        let now = Instant::now();
        assert!(acc.append(0, b"aaaaaa", 1, now).is_empty());
        let ready = acc.append(0, b"bbbbbb", 2, now);
        assert_eq!(ready.len(), 1);
        assert_eq!(ready[0].records.count(), 2);
        assert_eq!(acc.next_deadline(), None);
    }

    #[test]
    fn a_record_that_would_overflow_closes_the_batch_and_opens_the_next() {
        let mut acc = Accumulator::new(LINGER, 25);
        let t0 = Instant::now();
        assert!(acc.append(0, b"aaaaaa", 1, t0).is_empty());
        assert!(acc.append(0, b"bbbbbb", 2, t0).is_empty());
        let t1 = t0 + Duration::from_millis(10);
        let ready = acc.append(0, b"cccccc", 3, t1);
        assert_eq!(ready.len(), 1);
        assert_eq!(ready[0].tickets, vec![1, 2]);
        assert_eq!(acc.next_deadline(), Some(t1 + LINGER));
    }

    #[test]
    fn a_record_larger_than_a_batch_goes_alone() {
        let mut acc = Accumulator::new(LINGER, 8);
        let now = Instant::now();
        assert!(acc.append(0, b"a", 1, now).is_empty());
        let ready = acc.append(0, b"much too large", 2, now);
        assert_eq!(ready.len(), 2);
        assert_eq!(ready[0].tickets, vec![1]);
        assert_eq!(ready[1].tickets, vec![2]);
    }

    #[test]
    fn partitions_batch_independently_and_flush_takes_all() {
        let mut acc = Accumulator::new(LINGER, 1024);
        let now = Instant::now();
        acc.append(0, b"a", 1, now);
        acc.append(1, b"b", 2, now);
        acc.append(0, b"c", 3, now);
        let all = acc.take_all();
        assert_eq!(all.len(), 2);
        assert_eq!((all[0].partition, all[0].tickets.clone()), (0, vec![1, 3]));
        assert_eq!((all[1].partition, all[1].tickets.clone()), (1, vec![2]));
    }
}
