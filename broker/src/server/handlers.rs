//! Serving PRODUCE, FETCH and METADATA against the storage.

use std::sync::Arc;
use std::time::Duration;

use booblik_protocol::{
    AckPolicy, ErrorCode, FetchRequest, MAX_FETCH_PAYLOAD_BYTES, MAX_RECORD_PAYLOAD_BYTES,
    MetadataRequest, MetadataResponse, PartitionMetadata, ProduceRequest, ProduceResponse, Request,
    RequestBody, TopicMetadata, encode_fetch_response_header, encode_response,
};
use tokio::io::AsyncWriteExt;
use tokio::time::Instant;
use tracing::warn;

use super::metrics as m;
use super::sendfile::send_file;
use super::session::{MAX_KEPT_HEAP_FETCH_BUFFER_BYTES, Session, SessionError};
use crate::config::{FetchMode, MAX_FETCH_WAIT_MS};
use crate::storage::{Partition, StorageError};

impl Session {
    pub(super) async fn handle(&mut self, request: Request) -> Result<(), SessionError> {
        let api = request.api_key().name();
        metrics::counter!(m::REQUESTS, "api" => api).increment(1);
        let id = request.correlation_id;
        match request.body {
            RequestBody::Produce(req) => self.produce(id, req).await,
            RequestBody::Fetch(req) => self.fetch(id, req).await,
            RequestBody::Metadata(req) => {
                self.metadata(id, &req);
                Ok(())
            }
        }
    }

    async fn produce(&mut self, id: i32, req: ProduceRequest) -> Result<(), SessionError> {
        let Some(partition) = self
            .shared
            .storage
            .partition(req.topic.as_str(), req.partition)
        else {
            // Routing errors are answered even for ack NONE: the client must learn that its
            // records went nowhere.
            self.answer_error("produce", id, ErrorCode::UnknownTopicOrPartition);
            return Ok(());
        };
        // A record no FETCH could return (with its header it would not fit one FETCH payload)
        // would stop every consumer at it for good; the segment might well hold it, so the
        // storage does not refuse it. Refused whole before the storage sees the batch, and
        // answered even under ack NONE, like every refusal.
        if req.records.max_payload_len() > MAX_RECORD_PAYLOAD_BYTES {
            self.answer_error("produce", id, ErrorCode::RecordTooLarge);
            return Ok(());
        }
        let partition = Arc::clone(partition);
        match partition.append(req.records, req.ack).await {
            Ok(Some(appended)) => {
                let body = ProduceResponse {
                    base_offset: appended.base_offset,
                    log_end_offset: appended.log_end_offset,
                };
                encode_response(id, &body, &mut self.outbuf);
            }
            // ack NONE: no response at all.
            Ok(None) => debug_assert_eq!(req.ack, AckPolicy::None),
            Err(StorageError::RecordTooLarge { .. }) => {
                self.answer_error("produce", id, ErrorCode::RecordTooLarge);
            }
            // A full disk refused the batch whole; the partition takes the next one. No error
            // code says so, so the connection closes below like for a broken log (the client
            // must not believe the write happened), but this is logged with the partition.
            Err(error @ StorageError::NoSpace { .. }) => {
                warn!(
                    topic = %req.topic,
                    partition = req.partition,
                    %error,
                    "append refused: no space left; closing the connection (the partition stays writable)"
                );
                self.flush().await?;
                return Err(SessionError::Storage(error));
            }
            // The protocol has no code for "the log is broken" (a poisoned partition, an I/O
            // error). Closing the connection is the loud answer: the client fails every pending
            // request instead of believing a write that did not happen.
            Err(other) => {
                self.flush().await?;
                return Err(SessionError::Storage(other));
            }
        }
        Ok(())
    }

    async fn fetch(&mut self, id: i32, req: FetchRequest) -> Result<(), SessionError> {
        let Some(partition) = self
            .shared
            .storage
            .partition(req.topic.as_str(), req.partition)
        else {
            self.answer_error("fetch", id, ErrorCode::UnknownTopicOrPartition);
            return Ok(());
        };
        let partition = Arc::clone(partition);
        if let Some(long_poll) = req.long_poll.filter(|lp| lp.max_wait_ms > 0) {
            // Earlier responses must not wait behind our long poll.
            self.flush().await?;
            let wait = Duration::from_millis((long_poll.max_wait_ms as u64).min(MAX_FETCH_WAIT_MS));
            let started = Instant::now();
            let min_bytes = long_poll.min_bytes.max(1) as u64;
            metrics::counter!(m::FETCH_WAITS).increment(1);
            // The wait happens before any segment is opened, so a waiter never blocks retention.
            tokio::select! {
                () = partition.wait_for_bytes(req.fetch_offset, min_bytes, started + wait) => {}
                _ = self.shutdown.wait_for(|&stop| stop) => {}
            }
            metrics::histogram!(m::FETCH_WAIT_SECONDS).record(started.elapsed().as_secs_f64());
        }
        // maxBytes is at least 1 (checked by the codec); the frame limit caps it from above.
        let max_bytes = (req.max_bytes as usize).min(MAX_FETCH_PAYLOAD_BYTES) as u32;
        // Finding the record walks at most one index interval of length prefixes; when those
        // bytes are not cached, the walk too is done off the runtime threads.
        let fetch_offset = req.fetch_offset;
        let found = match partition.read_cached(fetch_offset, max_bytes) {
            Ok(Some(slice)) => Ok(slice),
            Ok(None) => {
                self.off_runtime(&partition, move |p| p.read(fetch_offset, max_bytes))
                    .await?
            }
            Err(error) => Err(error),
        };
        let slice = match found {
            Ok(slice) => slice,
            Err(StorageError::OffsetOutOfRange { .. }) => {
                self.answer_error("fetch", id, ErrorCode::OffsetOutOfRange);
                return Ok(());
            }
            Err(other) => {
                self.flush().await?;
                return Err(SessionError::Storage(other));
            }
        };
        // The header goes first; `slice` keeps the segment pinned until the last byte is sent.
        let len = slice.len();
        encode_fetch_response_header(id, slice.high_watermark(), len, &mut self.outbuf);
        if len == 0 {
            return Ok(());
        }
        // A runtime thread must not sleep on the disk: the sessions it serves would all wait.
        // Bytes in the page cache (a follower's, a recent replay's) are sent from here; bytes
        // that are not go through the blocking pool first (see `read_cold`).
        let zero_copy = self.shared.config.fetch_mode == FetchMode::ZeroCopy;
        if zero_copy && slice.is_cached()? != Some(false) {
            self.flush().await?;
            self.with_write_timeout(async |s: &mut Self| {
                send_file(&s.stream, slice.file(), slice.position(), len as usize).await
            })
            .await?;
        } else {
            // Heap mode, or a zero-copy FETCH of bytes not in the cache: those are read from
            // the disk anyway, so a copy through user space costs little next to the read.
            // Taken out of the session for the borrow checker; put back after the write. A
            // failure ends the session, so the buffer is not needed then.
            let mut buf = std::mem::take(&mut self.heap_fetch_buf);
            let cached_bytes = if zero_copy {
                Some(0)
            } else {
                slice.read_cached_into(&mut buf)?
            };
            match cached_bytes {
                // The slice (and its pin on the segment) moves to the blocking pool with the
                // buffer and is dropped there once its bytes are copied.
                Some(cached) if cached < len as usize => {
                    buf = self
                        .off_runtime(&partition, move |_| {
                            slice.read_rest_into(&mut buf, cached).map(|()| buf)
                        })
                        .await??;
                }
                Some(_) => drop(slice),
                // The filesystem cannot read without waiting: read here, as before it could.
                None => slice.read_rest_into(&mut buf, 0)?,
            }
            self.flush().await?;
            self.with_write_timeout(async |s: &mut Self| {
                s.stream.write_all(&buf[..len as usize]).await
            })
            .await?;
            // Zero-copy sessions keep no buffer between FETCHes: their cold reads are rare, and
            // a buffer kept in each would add up to a megabyte per connection.
            if !zero_copy && buf.len() <= MAX_KEPT_HEAP_FETCH_BUFFER_BYTES {
                self.heap_fetch_buf = buf;
            }
        }
        metrics::counter!(m::BYTES_OUT).increment(u64::from(len));
        Ok(())
    }

    /// Runs `read` on tokio's blocking pool, where waiting for the disk holds up no session but
    /// this one, holding one of the broker's
    /// [`MAX_CONCURRENT_COLD_READS`](super::MAX_CONCURRENT_COLD_READS) permits for as long as it
    /// runs (the permit moves into the task: a session dropped meanwhile does not free it early).
    /// The session waits for a permit like for the read itself; a broker shutting down waits for
    /// the cold reads already queued.
    async fn off_runtime<T: Send + 'static>(
        &self,
        partition: &Arc<Partition>,
        read: impl FnOnce(&Partition) -> T + Send + 'static,
    ) -> Result<T, SessionError> {
        let permit = Arc::clone(&self.shared.cold_reads)
            .acquire_owned()
            .await
            .expect("the cold-read semaphore is never closed");
        metrics::counter!(m::FETCH_COLD_READS).increment(1);
        let partition = Arc::clone(partition);
        let task = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            partition.test_hooks().pass_cold_read_gate();
            read(&partition)
        });
        task.await.map_err(|join| {
            SessionError::Io(std::io::Error::other(format!(
                "a FETCH read on the blocking pool failed: {join}"
            )))
        })
    }

    fn metadata(&mut self, id: i32, req: &MetadataRequest) {
        let storage = &self.shared.storage;
        if req
            .topics
            .iter()
            .any(|t| storage.partition(t.as_str(), 0).is_none())
        {
            // Naming any unknown topic fails the whole request.
            self.answer_error("metadata", id, ErrorCode::UnknownTopicOrPartition);
            return;
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
        encode_response(id, &MetadataResponse { topics }, &mut self.outbuf);
    }
}
