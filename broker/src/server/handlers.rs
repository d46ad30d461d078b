//! Applying a request: free functions from a decoded request to a [`Reply`], against the
//! storage and without the socket (PRODUCE and METADATA here, FETCH in `fetch.rs`).

use std::sync::Arc;

use booblik_protocol::probe::Stamp;
use booblik_protocol::{
    AckPolicy, ErrorCode, MAX_RECORD_PAYLOAD_BYTES, MetadataRequest, MetadataResponse,
    PartitionMetadata, ProduceRequest, ProduceResponse, Request, RequestBody, TopicMetadata,
    encode_error_response, encode_response,
};
use tokio::sync::watch;
use tracing::warn;

use super::Shared;
use super::fetch;
use super::metrics as m;
use super::reply::{PendingAppend, Reply};
use super::session::SessionError;
use crate::storage::{Appended, Partition, StorageError};

/// Applies `request` and returns its reply. A FETCH may wait here: for its long poll (cut short
/// when `shutdown` turns true) and for a cold read.
pub(crate) async fn apply(
    shared: &Shared,
    shutdown: &watch::Receiver<bool>,
    request: Request,
    received: Stamp,
) -> Reply {
    let api = request.api_key().name();
    metrics::counter!(m::REQUESTS, "api" => api).increment(1);
    let id = request.correlation_id;
    match request.body {
        RequestBody::Produce(req) => produce(shared, id, req, received).await,
        RequestBody::Fetch(req) => fetch::fetch(shared, shutdown, id, req).await,
        RequestBody::Metadata(req) => metadata(shared, id, &req),
    }
}

/// An error answer (no body), counted.
pub(crate) fn error(api: &'static str, correlation_id: i32, code: ErrorCode) -> Reply {
    metrics::counter!(m::ERRORS, "api" => api, "code" => code.name()).increment(1);
    let mut frame = Vec::with_capacity(10);
    encode_error_response(correlation_id, code, &mut frame);
    Reply::Frame(frame)
}

async fn produce(shared: &Shared, id: i32, req: ProduceRequest, received: Stamp) -> Reply {
    let Some(partition) = shared.storage.partition(req.topic.as_str(), req.partition) else {
        // Routing errors are answered even for ack NONE: the client must learn that its
        // records went nowhere.
        return error("produce", id, ErrorCode::UnknownTopicOrPartition);
    };
    // A record no FETCH could return (with its header it would not fit one FETCH payload)
    // would stop every consumer at it for good; the segment might well hold it, so the
    // storage does not refuse it. Refused whole before the storage sees the batch, and
    // answered even under ack NONE, like every refusal.
    if req.records.max_payload_len() > MAX_RECORD_PAYLOAD_BYTES {
        return error("produce", id, ErrorCode::RecordTooLarge);
    }
    let ack = req.ack;
    // Applying a PRODUCE is queueing its batch, or appending it inline when the partition is
    // idle: its place among the partition's appends (and so its offsets) is then fixed. Its
    // answer waits in the session's answer queue, so the wait for the write or the fsync holds
    // back no later request.
    match partition.append_queued(req.records, ack).await {
        Ok(None) => {
            debug_assert_eq!(ack, AckPolicy::None);
            Reply::Nothing
        }
        Ok(Some((written, answer))) => {
            if answer.was_inline() {
                received.hop("b1i session: frame decoded -> batch written inline");
            } else {
                received.hop("b1 session: frame decoded -> batch queued to the writer");
            }
            Reply::Append(PendingAppend {
                correlation_id: id,
                partition: Arc::clone(partition),
                written: Some(written),
                answer,
                received,
            })
        }
        Err(error) => produce_answer(id, partition, Err(error)),
    }
}

/// The reply to a PRODUCE once its append has a result: the offsets, an error code, or a close
/// when the protocol has no code for the failure.
pub(crate) fn produce_answer(
    id: i32,
    partition: &Partition,
    result: Result<Appended, StorageError>,
) -> Reply {
    match result {
        Ok(appended) => {
            let mut frame = Vec::with_capacity(26);
            let body = ProduceResponse {
                base_offset: appended.base_offset,
                log_end_offset: appended.log_end_offset,
            };
            encode_response(id, &body, &mut frame);
            Reply::Frame(frame)
        }
        Err(StorageError::RecordTooLarge { .. }) => error("produce", id, ErrorCode::RecordTooLarge),
        // A full disk refused the batch whole; the partition takes the next one. No error
        // code says so, so the connection closes like for a broken log (the client must not
        // believe the write happened), but this is logged with the partition.
        Err(error @ StorageError::NoSpace { .. }) => {
            warn!(
                topic = %partition.topic(),
                partition = partition.id(),
                %error,
                "append refused: no space left; closing the connection (the partition stays writable)"
            );
            Reply::Close(SessionError::Storage(error))
        }
        // The protocol has no code for "the log is broken" (a poisoned partition, an I/O
        // error). Closing the connection is the loud answer: the client fails every pending
        // request instead of believing a write that did not happen.
        Err(other) => Reply::Close(SessionError::Storage(other)),
    }
}

impl PendingAppend {
    /// True when [`PendingAppend::resolve`] may block its thread for an fsync (a FORCED batch
    /// appended inline that no fsync covers yet): the answers before it are written first.
    pub(crate) fn may_block(&self) -> bool {
        self.answer.may_block(&self.partition)
    }

    /// Waits for the append's answer and turns it into the reply to send.
    pub(crate) async fn resolve(self) -> Reply {
        let result = self.answer.wait(&self.partition).await;
        produce_answer(self.correlation_id, &self.partition, result)
    }
}

fn metadata(shared: &Shared, id: i32, req: &MetadataRequest) -> Reply {
    let storage = &shared.storage;
    if req
        .topics
        .iter()
        .any(|t| storage.partition(t.as_str(), 0).is_none())
    {
        // Naming any unknown topic fails the whole request.
        return error("metadata", id, ErrorCode::UnknownTopicOrPartition);
    }
    let topics = storage
        .topics()
        .filter(|(name, _)| req.topics.is_empty() || req.topics.contains(name))
        .map(|(name, partitions)| TopicMetadata {
            name: name.clone(),
            partitions: partitions
                .iter()
                .map(|p| PartitionMetadata {
                    id: p.id(),
                    log_start_offset: p.log_start_offset(),
                    high_watermark: p.high_watermark(),
                })
                .collect(),
        })
        .collect();
    let mut frame = Vec::new();
    encode_response(id, &MetadataResponse { topics }, &mut frame);
    Reply::Frame(frame)
}

#[cfg(test)]
mod tests {
    //! Handlers are functions from a request to a [`Reply`]: tested here without any socket.

    use std::time::Duration;

    use booblik_protocol::{
        FetchRequest, LongPoll, ProduceRequest, RecordSet, TopicName, decode_response_frame,
    };

    use super::*;
    use crate::config::{BrokerConfig, parse_topics};
    use crate::server::cold_reads::ColdReads;
    use crate::storage::Storage;

    /// Topic `t` with one partition whose segments hold exactly one 56-byte record.
    fn shared(dir: &tempfile::TempDir) -> Arc<Shared> {
        let mut config = BrokerConfig {
            topics: parse_topics("t:1").unwrap(),
            ..BrokerConfig::default()
        };
        config.storage.data_dir = dir.path().to_path_buf();
        config.storage.segment_bytes = 64;
        let storage = Storage::open(config.storage.clone(), &config.topics).unwrap();
        Arc::new(Shared {
            config,
            storage: Arc::new(storage),
            cold_reads: ColdReads::new(2),
        })
    }

    fn produce(id: i32, partition: i32, ack: AckPolicy) -> Request {
        Request {
            correlation_id: id,
            body: RequestBody::Produce(ProduceRequest {
                topic: TopicName::new("t").unwrap(),
                partition,
                ack,
                records: RecordSet::from_payloads([[7u8; 56]]).unwrap(),
            }),
        }
    }

    fn fetch(id: i32, offset: i64, long_poll: Option<LongPoll>) -> Request {
        Request {
            correlation_id: id,
            body: RequestBody::Fetch(FetchRequest {
                topic: TopicName::new("t").unwrap(),
                partition: 0,
                fetch_offset: offset,
                max_bytes: 4096,
                long_poll,
            }),
        }
    }

    /// Correlation id and error code of a reply that is one frame.
    fn header_of(reply: &Reply) -> (i32, ErrorCode) {
        let Reply::Frame(frame) = reply else {
            panic!("expected a frame, got {reply:?}");
        };
        match decode_response_frame(frame).unwrap() {
            booblik_protocol::Decoded::Complete { value, used } => {
                assert_eq!(used, frame.len());
                (value.header.correlation_id, value.header.error_code)
            }
            booblik_protocol::Decoded::Incomplete { .. } => panic!("a whole frame"),
        }
    }

    async fn apply_now(shared: &Shared, request: Request) -> Reply {
        let (_stop, shutdown) = watch::channel(false);
        apply(shared, &shutdown, request, Stamp::now()).await
    }

    #[tokio::test]
    async fn a_produce_is_applied_by_queueing_and_its_answer_comes_when_written() {
        let dir = tempfile::tempdir().unwrap();
        let shared = shared(&dir);
        let Reply::Append(mut pending) = apply_now(&shared, produce(4, 0, AckPolicy::Forced)).await
        else {
            panic!("a WRITTEN or FORCED produce waits for the writer");
        };
        pending.written.take().unwrap().wait().await;
        assert_eq!(
            shared.storage.partition("t", 0).unwrap().high_watermark(),
            1
        );
        let answer = pending.resolve().await;
        assert_eq!(header_of(&answer), (4, ErrorCode::None));
        assert!(matches!(
            apply_now(&shared, produce(5, 0, AckPolicy::None)).await,
            Reply::Nothing
        ));
        shared.storage.close().unwrap();
    }

    #[tokio::test]
    async fn refusals_are_answered_with_their_code_and_broken_logs_close() {
        let dir = tempfile::tempdir().unwrap();
        let shared = shared(&dir);
        // Routing errors are answered even for ack NONE.
        let reply = apply_now(&shared, produce(6, 3, AckPolicy::None)).await;
        assert_eq!(header_of(&reply), (6, ErrorCode::UnknownTopicOrPartition));
        let partition = shared.storage.partition("t", 0).unwrap();
        let too_large = StorageError::RecordTooLarge { size: 99, max: 56 };
        assert_eq!(
            header_of(&produce_answer(7, partition, Err(too_large))),
            (7, ErrorCode::RecordTooLarge)
        );
        let full = StorageError::NoSpace {
            context: "test".into(),
            source: std::io::Error::other("no space"),
        };
        assert!(matches!(
            produce_answer(8, partition, Err(full)),
            Reply::Close(SessionError::Storage(StorageError::NoSpace { .. }))
        ));
        let out_of_range = apply_now(&shared, fetch(9, 5, None)).await;
        assert_eq!(header_of(&out_of_range), (9, ErrorCode::OffsetOutOfRange));
        shared.storage.close().unwrap();
    }

    #[tokio::test]
    async fn a_fetch_replies_with_its_header_and_a_slice_of_the_segment() {
        let dir = tempfile::tempdir().unwrap();
        let shared = shared(&dir);
        let Reply::Fetch(at_end) = apply_now(&shared, fetch(1, 0, None)).await else {
            panic!("a FETCH at the high watermark is answered");
        };
        assert!(at_end.slice.is_empty());
        assert_eq!(
            at_end.header.len(),
            booblik_protocol::FETCH_RESPONSE_HEADER_BYTES
        );
        let partition = shared.storage.partition("t", 0).unwrap();
        partition
            .append(
                RecordSet::from_payloads([[1u8; 56]]).unwrap(),
                AckPolicy::Written,
            )
            .await
            .unwrap();
        let Reply::Fetch(first) = apply_now(&shared, fetch(2, 0, None)).await else {
            panic!("a FETCH of a record is answered");
        };
        assert_eq!((first.slice.position(), first.slice.len()), (0, 64));
        assert_eq!(first.slice.high_watermark(), 1);
        shared.storage.close().unwrap();
    }

    /// A long poll at the end of a full segment: the next record goes to a new segment, so the
    /// position it waited on is the end of a sealed segment and the FETCH locates again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_long_poll_at_the_end_of_a_full_segment_locates_again_after_the_roll() {
        let dir = tempfile::tempdir().unwrap();
        let shared = shared(&dir);
        let partition = Arc::clone(shared.storage.partition("t", 0).unwrap());
        partition
            .append(
                RecordSet::from_payloads([[1u8; 56]]).unwrap(),
                AckPolicy::Written,
            )
            .await
            .unwrap();
        let poll = LongPoll {
            max_wait_ms: 30_000,
            min_bytes: 1,
        };
        let waiting = {
            let shared = Arc::clone(&shared);
            tokio::spawn(async move { apply_now(&shared, fetch(3, 1, Some(poll))).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "nothing to return yet");
        partition
            .append(
                RecordSet::from_payloads([[2u8; 56]]).unwrap(),
                AckPolicy::Written,
            )
            .await
            .unwrap();
        assert_eq!(
            partition.stats().segments,
            2,
            "the second record rolled the log"
        );
        let Reply::Fetch(reply) = tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .unwrap()
            .unwrap()
        else {
            panic!("the long poll is answered with the record");
        };
        assert_eq!(reply.slice.segment_base_offset(), 1);
        assert_eq!((reply.slice.position(), reply.slice.len()), (0, 64));
        assert_eq!(reply.slice.to_bytes().unwrap()[8..], [2u8; 56]);
        shared.storage.close().unwrap();
    }
}
