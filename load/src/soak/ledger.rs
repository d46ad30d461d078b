//! The soak's book of truth: what was acknowledged where, what was read where, and every
//! broken promise.
//!
//! A record's **identity** is `(producer, seq)`, packed into a `u64` and written at the start of
//! its payload; the rest of the payload is a pattern derived from the identity, so a record whose
//! bytes changed anywhere is caught, not only one whose header changed (the CRC would catch most
//! of it first, on the client).
//!
//! Per partition the ledger keeps two tables indexed by offset:
//! * **acked** — the identity the producer's delivery reported at that offset;
//! * **seen** — the identity the first reader found there. Every later read of that offset, by
//!   any reader, must find the same identity ("a record never changes once it has an offset"),
//!   and must agree with `acked` where both exist.
//!
//! Nothing is trusted from the reading side that could hide a bug: continuity checks live with
//! the readers (each knows its own position), the final coverage check here.

use std::collections::HashMap;
use std::sync::Mutex;

/// Bytes of the identity at the start of every payload.
pub const IDENTITY_BYTES: usize = 8;
/// Sequence numbers use the low 48 bits of an identity.
const SEQ_BITS: u32 = 48;
/// Violations kept verbatim for the report; the rest are only counted.
const MAX_VIOLATION_SAMPLES: usize = 50;
/// "Nothing read at this offset yet" in the `seen` table (identities are never zero).
const UNSEEN: u64 = 0;

/// Packs `(producer, seq)`; never zero.
pub fn identity(producer: u16, seq: u64) -> u64 {
    ((u64::from(producer) + 1) << SEQ_BITS) | (seq & ((1 << SEQ_BITS) - 1))
}

/// The payload of identity `id`, `len` bytes long (at least [`IDENTITY_BYTES`]).
pub fn payload(id: u64, len: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; len.max(IDENTITY_BYTES)];
    bytes[..IDENTITY_BYTES].copy_from_slice(&id.to_be_bytes());
    for (i, byte) in bytes[IDENTITY_BYTES..].iter_mut().enumerate() {
        *byte = pattern_byte(id, i);
    }
    bytes
}

/// The identity a payload claims, if its length and pattern are intact.
pub fn decode(payload: &[u8]) -> Result<u64, String> {
    let id = payload
        .first_chunk::<IDENTITY_BYTES>()
        .map(|b| u64::from_be_bytes(*b))
        .ok_or_else(|| format!("a payload of {} bytes has no identity", payload.len()))?;
    if id == UNSEEN {
        return Err("a payload with identity zero".into());
    }
    let body_ok = payload[IDENTITY_BYTES..]
        .iter()
        .enumerate()
        .all(|(i, byte)| *byte == pattern_byte(id, i));
    if body_ok {
        Ok(id)
    } else {
        Err(format!(
            "identity {id:#x}: the body does not match its pattern"
        ))
    }
}

fn pattern_byte(id: u64, index: usize) -> u8 {
    (id.wrapping_mul(31).wrapping_add(index as u64) % 251) as u8
}

/// Both tables of one partition.
#[derive(Debug, Default)]
struct PartitionBook {
    acked: HashMap<i64, u64>,
    seen: Vec<u64>,
}

/// The shared ledger.
#[derive(Debug)]
pub struct Ledger {
    partitions: Vec<Mutex<PartitionBook>>,
    violations: Mutex<Violations>,
}

#[derive(Debug, Default)]
struct Violations {
    count: u64,
    samples: Vec<String>,
}

impl Ledger {
    /// An empty ledger for `partitions` partitions.
    pub fn new(partitions: usize) -> Self {
        Self {
            partitions: (0..partitions).map(|_| Mutex::default()).collect(),
            violations: Mutex::default(),
        }
    }

    /// Records a broken promise.
    pub fn violation(&self, what: String) {
        tracing::error!(violation = %what, "soak violation");
        let mut v = self.violations.lock().expect("ledger lock");
        v.count += 1;
        if v.samples.len() < MAX_VIOLATION_SAMPLES {
            v.samples.push(what);
        }
    }

    /// Violations so far and the first few of them.
    pub fn violations(&self) -> (u64, Vec<String>) {
        let v = self.violations.lock().expect("ledger lock");
        (v.count, v.samples.clone())
    }

    /// A producer's delivery said: identity `id` is at `offset` of `partition`.
    pub fn acked(&self, partition: i32, offset: i64, id: u64) {
        let mut book = self.book(partition);
        if let Some(previous) = book.acked.insert(offset, id) {
            drop(book);
            self.violation(format!(
                "p{partition}@{offset}: acknowledged twice, for {previous:#x} and {id:#x}"
            ));
            return;
        }
        let seen = book.seen.get(offset as usize).copied().unwrap_or(UNSEEN);
        drop(book);
        if seen != UNSEEN && seen != id {
            self.violation(format!(
                "p{partition}@{offset}: acknowledged as {id:#x} but read as {seen:#x}"
            ));
        }
    }

    /// A reader found `payload` at `offset` of `partition`.
    pub fn read(&self, partition: i32, offset: i64, payload: &[u8]) {
        let id = match decode(payload) {
            Ok(id) => id,
            Err(e) => {
                self.violation(format!("p{partition}@{offset}: {e}"));
                return;
            }
        };
        let mut book = self.book(partition);
        let index = offset as usize;
        if book.seen.len() <= index {
            book.seen.resize(index + 1, UNSEEN);
        }
        let first = book.seen[index];
        if first == UNSEEN {
            book.seen[index] = id;
        }
        let acked = book.acked.get(&offset).copied();
        drop(book);
        if first != UNSEEN && first != id {
            self.violation(format!(
                "p{partition}@{offset}: read as {id:#x}, earlier as {first:#x} (a record changed)"
            ));
        }
        if let Some(acked) = acked
            && acked != id
        {
            self.violation(format!(
                "p{partition}@{offset}: read as {id:#x}, acknowledged as {acked:#x}"
            ));
        }
    }

    /// The final check, once every reader has read up to `end_offsets[p]`: every acknowledged
    /// record was read (and so lies below the end); no identity appears at two offsets. Returns
    /// (acknowledged records, records in the logs, records present but never acknowledged).
    pub fn final_check(&self, end_offsets: &[i64]) -> (u64, u64, u64) {
        let mut acked_total = 0u64;
        let mut in_log = 0u64;
        let mut unacked_present = 0u64;
        let mut offsets_of: HashMap<u64, (i32, i64)> = HashMap::new();
        for (partition, end) in end_offsets.iter().enumerate() {
            let partition = partition as i32;
            let book = self.book(partition);
            acked_total += book.acked.len() as u64;
            in_log += *end as u64;
            let mut problems = Vec::new();
            for (&offset, &id) in &book.acked {
                let seen = book.seen.get(offset as usize).copied().unwrap_or(UNSEEN);
                if offset >= *end || seen == UNSEEN {
                    problems.push(format!(
                        "p{partition}@{offset}: acknowledged ({id:#x}) but never read (log end {end})"
                    ));
                }
            }
            for offset in 0..*end {
                let seen = book.seen.get(offset as usize).copied().unwrap_or(UNSEEN);
                if seen == UNSEEN {
                    problems.push(format!(
                        "p{partition}@{offset}: below the log end but never read"
                    ));
                    continue;
                }
                if !book.acked.contains_key(&offset) {
                    unacked_present += 1;
                }
                if let Some((p, o)) = offsets_of.insert(seen, (partition, offset)) {
                    problems.push(format!(
                        "{seen:#x} is in the log twice: p{p}@{o} and p{partition}@{offset}"
                    ));
                }
            }
            drop(book);
            for problem in problems {
                self.violation(problem);
            }
        }
        (acked_total, in_log, unacked_present)
    }

    fn book(&self, partition: i32) -> std::sync::MutexGuard<'_, PartitionBook> {
        self.partitions[partition as usize]
            .lock()
            .expect("ledger lock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_decodes_to_its_identity_and_a_flipped_byte_is_caught() {
        let id = identity(3, 12_345);
        let mut bytes = payload(id, 100);
        assert_eq!(decode(&bytes), Ok(id));
        bytes[50] ^= 1;
        assert!(decode(&bytes).is_err());
    }

    #[test]
    fn reading_a_different_record_at_an_acknowledged_offset_is_a_violation() {
        let ledger = Ledger::new(1);
        ledger.acked(0, 0, identity(0, 1));
        ledger.read(0, 0, &payload(identity(0, 2), 20));
        assert_eq!(ledger.violations().0, 1);
    }

    #[test]
    fn an_acknowledged_record_never_read_is_a_violation() {
        let ledger = Ledger::new(1);
        ledger.acked(0, 0, identity(0, 1));
        ledger.acked(0, 1, identity(0, 2));
        ledger.read(0, 0, &payload(identity(0, 1), 20));
        let (acked, in_log, unacked) = ledger.final_check(&[1]);
        assert_eq!((acked, in_log, unacked), (2, 1, 0));
        assert_eq!(ledger.violations().0, 1);
    }

    #[test]
    fn a_clean_log_passes() {
        let ledger = Ledger::new(1);
        for seq in 0..10 {
            ledger.acked(0, seq, identity(1, seq as u64));
            ledger.read(0, seq, &payload(identity(1, seq as u64), 30));
        }
        assert_eq!(ledger.final_check(&[10]), (10, 10, 0));
        assert_eq!(ledger.violations().0, 0);
    }
}
