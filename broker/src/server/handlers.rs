//! Applying a request: free functions from a decoded request to a [`Reply`], against the
//! storage and without the socket (PRODUCE and METADATA here, FETCH in `fetch.rs`).

use std::sync::Arc;

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
) -> Reply {
    let api = request.api_key().name();
    metrics::counter!(m::REQUESTS, "api" => api).increment(1);
    let id = request.correlation_id;
    match request.body {
        RequestBody::Produce(req) => produce(shared, id, req).await,
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

async fn produce(shared: &Shared, id: i32, req: ProduceRequest) -> Reply {
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
    // Applying a PRODUCE is queueing its batch: its place among the partition's appends (and
    // so its offsets) is then fixed. Its answer waits in the session's answer queue, so the
    // wait for the write or the fsync holds back no later request.
    match partition.append_queued(req.records, ack).await {
        Ok(None) => {
            debug_assert_eq!(ack, AckPolicy::None);
            Reply::Nothing
        }
        Ok(Some((written, answer))) => Reply::Append(PendingAppend {
            correlation_id: id,
            partition: Arc::clone(partition),
            written: Some(written),
            answer,
        }),
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
