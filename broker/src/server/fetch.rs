//! The FETCH pipeline: locate the record once, long-poll on a byte count, cut the slice, then —
//! when its turn to be written comes — learn whether its bytes are cached and read them through
//! the cold-read dispatcher if not.
//!
//! 1. **Locate** ([`fetch`]): where the record at the fetch offset starts, asked of the page
//!    cache only (`Partition::locate_cached`); a lookup that needs the disk goes through
//!    [`ColdReads`]. The position pins nothing.
//! 2. **Long poll** (FETCH v2 with `maxWait > 0`): waits until the log holds `max(minBytes, 1)`
//!    bytes past the position, or the deadline (clamped to 60 s), or shutdown. It compares byte
//!    counts only, so a waiter holds no segment (SPEC §2) and does no lookup.
//! 3. **Slice**: the segment is pinned and the payload's length fixed, from the position, with
//!    no second lookup. If the log rolled at the position while it waited, or retention dropped
//!    the segment, the FETCH locates again (the lookup after a roll is the start of the next
//!    segment: cheap); out of range then answers OFFSET_OUT_OF_RANGE.
//! 4. **Payload** ([`residency`], [`read_cold`]), run by the session when the answer is due: a
//!    zero-copy FETCH of cached bytes is sent with `sendfile`; bytes not in the page cache (a
//!    replay) are read on the blocking pool into the session's buffer and written from there;
//!    heap mode reads the cached prefix in place and the rest through the dispatcher. The
//!    payload is read only when due, so answers queued behind a FORCED PRODUCE hold a segment
//!    pin each, not their bytes.

use std::sync::Arc;
use std::time::Duration;

use booblik_protocol::{
    ErrorCode, FetchRequest, MAX_FETCH_PAYLOAD_BYTES, encode_fetch_response_header,
};
use tokio::sync::watch;
use tokio::time::Instant;

use super::Shared;
use super::cold_reads::ColdReads;
use super::handlers::error;
use super::metrics as m;
use super::reply::{FetchReply, Reply};
use super::session::SessionError;
use crate::config::MAX_FETCH_WAIT_MS;
use crate::storage::{FetchPosition, Partition, ReadSlice, StorageError};

/// Applies a FETCH: steps 1–3 of the module docs.
pub(crate) async fn fetch(
    shared: &Shared,
    shutdown: &watch::Receiver<bool>,
    id: i32,
    req: FetchRequest,
) -> Reply {
    let Some(partition) = shared.storage.partition(req.topic.as_str(), req.partition) else {
        return error("fetch", id, ErrorCode::UnknownTopicOrPartition);
    };
    // maxBytes is at least 1 (checked by the codec); the frame limit caps it from above.
    let max_bytes = (req.max_bytes as usize).min(MAX_FETCH_PAYLOAD_BYTES) as u32;
    let mut at = match locate(&shared.cold_reads, partition, id, req.fetch_offset).await {
        Ok(at) => at,
        Err(reply) => return reply,
    };
    if let Some(long_poll) = req.long_poll.filter(|lp| lp.max_wait_ms > 0) {
        let wait = Duration::from_millis((long_poll.max_wait_ms as u64).min(MAX_FETCH_WAIT_MS));
        let started = Instant::now();
        let min_bytes = long_poll.min_bytes.max(1) as u64;
        metrics::counter!(m::FETCH_WAITS).increment(1);
        let mut shutdown = shutdown.clone();
        tokio::select! {
            () = partition.wait_for_bytes(&at, min_bytes, started + wait) => {}
            _ = shutdown.wait_for(|&stop| stop) => {}
        }
        metrics::histogram!(m::FETCH_WAIT_SECONDS).record(started.elapsed().as_secs_f64());
    }
    // At most one roll or retention between two lookups is the rule; the loop ends because
    // each retry follows one (see `LogView::read`).
    loop {
        if let Some(slice) = partition.slice_at(&at, max_bytes) {
            let mut header = Vec::with_capacity(booblik_protocol::FETCH_RESPONSE_HEADER_BYTES);
            encode_fetch_response_header(id, slice.high_watermark(), slice.len(), &mut header);
            return Reply::Fetch(FetchReply {
                header,
                partition: Arc::clone(partition),
                slice,
                cut: booblik_protocol::probe::Stamp::now(),
            });
        }
        at = match locate(&shared.cold_reads, partition, id, req.fetch_offset).await {
            Ok(at) => at,
            Err(reply) => return reply,
        };
    }
}

/// Step 1: the record's position, from the page cache or through the dispatcher; an
/// OFFSET_OUT_OF_RANGE answer to request `id` when the offset is outside the log, a close when
/// the log cannot be read.
async fn locate(
    cold_reads: &ColdReads,
    partition: &Arc<Partition>,
    id: i32,
    fetch_offset: i64,
) -> Result<FetchPosition, Reply> {
    let found = match partition.locate_cached(fetch_offset) {
        Ok(Some(at)) => Ok(at),
        // The walk to the record needs the disk: not on this (runtime) thread.
        Ok(None) => cold_reads
            .run(partition, move |p| p.locate(fetch_offset))
            .await
            .map_err(Reply::Close)?,
        Err(error) => Err(error),
    };
    found.map_err(|error| match error {
        StorageError::OffsetOutOfRange { .. } => error_reply(id),
        other => Reply::Close(SessionError::Storage(other)),
    })
}

fn error_reply(id: i32) -> Reply {
    error("fetch", id, ErrorCode::OffsetOutOfRange)
}

/// Where a FETCH payload's bytes are, learned once when the answer is due.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Residency {
    /// Zero-copy, in the page cache (or the filesystem cannot tell): `sendfile` the slice.
    SendFile,
    /// The first `cached` bytes are in the buffer already (heap mode; 0 for a zero-copy miss);
    /// the rest must be read from the disk, through the dispatcher, by [`read_cold`].
    Cold { cached: usize },
    /// All the bytes are in the buffer.
    InBuffer,
}

/// Step 4, without waiting for the disk: the payload's residency. Heap mode reads the cached
/// prefix into `buf` as it asks.
pub(crate) fn residency(
    slice: &ReadSlice,
    zero_copy: bool,
    buf: &mut Vec<u8>,
) -> Result<Residency, StorageError> {
    let len = slice.len() as usize;
    if zero_copy {
        // `None`: the filesystem cannot tell; `sendfile` as before the probe existed.
        return Ok(if slice.is_cached()? == Some(false) {
            Residency::Cold { cached: 0 }
        } else {
            Residency::SendFile
        });
    }
    Ok(match slice.read_cached_into(buf)? {
        Some(cached) if cached < len => Residency::Cold { cached },
        Some(_) => Residency::InBuffer,
        // The filesystem cannot read without waiting: read here, as before it could.
        None => {
            slice.read_rest_into(buf, 0)?;
            Residency::InBuffer
        }
    })
}

/// Step 4 for bytes not in the page cache: reads `slice[cached..]` into `buf` on the blocking
/// pool through the dispatcher. The slice (and its pin on the segment) moves to the blocking
/// pool with the buffer and is dropped there once its bytes are copied.
pub(crate) async fn read_cold(
    cold_reads: &ColdReads,
    partition: &Arc<Partition>,
    slice: ReadSlice,
    buf: Vec<u8>,
    cached: usize,
) -> Result<Vec<u8>, SessionError> {
    let mut buf = buf;
    Ok(cold_reads
        .run(partition, move |_| {
            slice.read_rest_into(&mut buf, cached).map(|()| buf)
        })
        .await??)
}
