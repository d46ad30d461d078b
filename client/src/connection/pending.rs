//! The FIFO of requests awaiting an answer, and the rule that matches answers to them.
//!
//! The broker answers strictly in request order, so the pending requests form a queue and an
//! answer must carry the correlationId at its head. A map from id to caller would also "work"
//! — and would silently survive a broker that reorders answers, which is exactly the bug the
//! ids exist to catch. With a queue a reordering is a loud [`Matched::Mismatch`].
//!
//! `ack = NONE` PRODUCE requests complicate the picture by one rule: the broker sends no answer
//! for an accepted one, but still answers one it refuses while decoding or routing (an unknown
//! partition, say). Such requests sit in the queue as [`PendingKind::Unanswered`] entries. When
//! an answer arrives with another id, every unanswered entry before the matching one was
//! accepted silently and is dropped; when it carries their id, it is that request's refusal.
//!
//! This file is pure state: no I/O, no tasks. `shared.rs` puts it behind a mutex.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, oneshot};

use crate::connection::response::RawResponse;
use crate::error::ClientError;

/// Where a request's outcome goes: an answer (`Some`), "written, no answer expected" (`None`),
/// or the reason it failed.
pub(crate) type Reply = oneshot::Sender<Result<Option<RawResponse>, ClientError>>;

/// One request that was written (or is about to be) and may still be answered.
#[derive(Debug)]
pub(crate) struct Pending {
    /// Its correlationId.
    pub(crate) correlation_id: i32,
    /// Whether an answer is owed.
    pub(crate) kind: PendingKind,
}

/// Whether a pending request is owed an answer.
#[derive(Debug)]
pub(crate) enum PendingKind {
    /// An answer is owed. Holds one of the connection's in-flight permits until it arrives.
    Answered {
        /// The caller waiting for it.
        reply: Reply,
        /// Released when the entry is dropped.
        _permit: OwnedSemaphorePermit,
    },
    /// `ack = NONE`: no answer unless the broker refuses it. The caller was told "written".
    Unanswered,
}

/// What an arriving answer matched.
#[derive(Debug)]
pub(crate) enum Matched {
    /// The head request, owed this answer.
    Answer(Reply),
    /// An `ack = NONE` request the broker answered anyway (a refusal).
    UnansweredRequest {
        /// Its correlationId.
        correlation_id: i32,
    },
    /// The head request has another id: the broker broke response order.
    Mismatch {
        /// The head's correlationId.
        expected: i32,
    },
    /// Nothing was pending.
    Unsolicited,
}

/// The queue itself, plus the "closed" state: once closed, nothing can be pushed, so no entry
/// can be stranded after the failure that drained the queue.
#[derive(Debug)]
pub(crate) struct PendingQueue {
    entries: VecDeque<Pending>,
    unanswered: usize,
    max_unanswered: usize,
    forgotten_unanswered: u64,
    closed: Option<Arc<str>>,
}

impl PendingQueue {
    /// An open, empty queue remembering at most `max_unanswered` `ack = NONE` requests.
    pub(crate) fn new(max_unanswered: usize) -> Self {
        Self {
            entries: VecDeque::new(),
            unanswered: 0,
            max_unanswered,
            forgotten_unanswered: 0,
            closed: None,
        }
    }

    /// Why the queue was closed, if it was.
    pub(crate) fn closed_reason(&self) -> Option<&Arc<str>> {
        self.closed.as_ref()
    }

    /// Requests in the queue.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no request is in the queue.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `ack = NONE` requests forgotten because more than `max_unanswered` were outstanding.
    pub(crate) fn forgotten_unanswered(&self) -> u64 {
        self.forgotten_unanswered
    }

    /// Appends a request about to be written. Gives it back with the reason when closed.
    pub(crate) fn push(&mut self, pending: Pending) -> Result<(), (Pending, Arc<str>)> {
        if let Some(reason) = &self.closed {
            return Err((pending, Arc::clone(reason)));
        }
        if matches!(pending.kind, PendingKind::Unanswered) {
            if self.unanswered == self.max_unanswered {
                self.forget_oldest_unanswered();
            }
            self.unanswered += 1;
        }
        self.entries.push_back(pending);
        Ok(())
    }

    fn forget_oldest_unanswered(&mut self) {
        // Answered entries before it are bounded by the in-flight limit, so the scan is short.
        if let Some(index) = self
            .entries
            .iter()
            .position(|p| matches!(p.kind, PendingKind::Unanswered))
        {
            self.entries.remove(index);
            self.unanswered -= 1;
            self.forgotten_unanswered += 1;
        }
    }

    /// Matches an answer carrying `correlation_id` against the head of the queue.
    pub(crate) fn match_response(&mut self, correlation_id: i32) -> Matched {
        loop {
            let Some(head) = self.entries.front() else {
                return Matched::Unsolicited;
            };
            let head_id = head.correlation_id;
            let head_unanswered = matches!(head.kind, PendingKind::Unanswered);
            if head_id != correlation_id {
                if head_unanswered {
                    // Answers come in order, so this one was accepted without a word.
                    self.entries.pop_front();
                    self.unanswered -= 1;
                    continue;
                }
                return Matched::Mismatch { expected: head_id };
            }
            let head = self.entries.pop_front().expect("the head was just seen");
            return match head.kind {
                PendingKind::Answered { reply, _permit } => Matched::Answer(reply),
                PendingKind::Unanswered => {
                    self.unanswered -= 1;
                    Matched::UnansweredRequest { correlation_id }
                }
            };
        }
    }

    /// Closes the queue and hands back everything pending, to be failed by the caller.
    /// `None` when it was already closed (the first cause wins).
    pub(crate) fn close(&mut self, reason: Arc<str>) -> Option<Vec<Pending>> {
        if self.closed.is_some() {
            return None;
        }
        self.closed = Some(reason);
        self.unanswered = 0;
        Some(self.entries.drain(..).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::Semaphore;

    fn answered(
        id: i32,
        permits: &Arc<Semaphore>,
    ) -> (
        Pending,
        oneshot::Receiver<Result<Option<RawResponse>, ClientError>>,
    ) {
        let (reply, rx) = oneshot::channel();
        let pending = Pending {
            correlation_id: id,
            kind: PendingKind::Answered {
                reply,
                _permit: Arc::clone(permits).try_acquire_owned().unwrap(),
            },
        };
        (pending, rx)
    }

    fn unanswered(id: i32) -> Pending {
        Pending {
            correlation_id: id,
            kind: PendingKind::Unanswered,
        }
    }

    #[test]
    fn answers_match_the_head_in_order_and_release_permits() {
        let permits = Arc::new(Semaphore::new(2));
        let mut queue = PendingQueue::new(8);
        let (a, _ra) = answered(1, &permits);
        let (b, _rb) = answered(2, &permits);
        queue.push(a).unwrap();
        queue.push(b).unwrap();
        assert_eq!(permits.available_permits(), 0);
        assert!(matches!(queue.match_response(1), Matched::Answer(_)));
        assert_eq!(permits.available_permits(), 1);
        assert!(matches!(queue.match_response(2), Matched::Answer(_)));
        assert!(matches!(queue.match_response(3), Matched::Unsolicited));
    }

    #[test]
    fn an_answer_for_a_later_request_is_a_mismatch_naming_the_head() {
        let permits = Arc::new(Semaphore::new(2));
        let mut queue = PendingQueue::new(8);
        let (a, _ra) = answered(1, &permits);
        let (b, _rb) = answered(2, &permits);
        queue.push(a).unwrap();
        queue.push(b).unwrap();
        assert!(matches!(
            queue.match_response(2),
            Matched::Mismatch { expected: 1 }
        ));
        assert_eq!(queue.len(), 2, "a mismatch consumes nothing");
    }

    #[test]
    fn silently_accepted_none_requests_are_skipped_and_refused_ones_matched() {
        let permits = Arc::new(Semaphore::new(2));
        let mut queue = PendingQueue::new(8);
        queue.push(unanswered(1)).unwrap();
        queue.push(unanswered(2)).unwrap();
        let (c, _rc) = answered(3, &permits);
        queue.push(c).unwrap();
        // 1 was accepted silently; 2 was refused.
        assert!(matches!(
            queue.match_response(2),
            Matched::UnansweredRequest { correlation_id: 2 }
        ));
        assert!(matches!(queue.match_response(3), Matched::Answer(_)));
        assert_eq!(queue.len(), 0);
    }

    #[test]
    fn the_oldest_unanswered_request_is_forgotten_past_the_limit() {
        let mut queue = PendingQueue::new(2);
        for id in 1..=3 {
            queue.push(unanswered(id)).unwrap();
        }
        assert_eq!(queue.len(), 2);
        assert_eq!(queue.forgotten_unanswered(), 1);
        assert!(matches!(
            queue.match_response(2),
            Matched::UnansweredRequest { correlation_id: 2 }
        ));
    }

    #[test]
    fn a_closed_queue_refuses_pushes_and_drains_once() {
        let permits = Arc::new(Semaphore::new(2));
        let mut queue = PendingQueue::new(8);
        let (a, _ra) = answered(1, &permits);
        queue.push(a).unwrap();
        let drained = queue.close("gone".into()).unwrap();
        assert_eq!(drained.len(), 1);
        assert!(queue.close("again".into()).is_none());
        let (b, _rb) = answered(2, &permits);
        let (_, reason) = queue.push(b).unwrap_err();
        assert_eq!(&*reason, "gone");
    }
}
