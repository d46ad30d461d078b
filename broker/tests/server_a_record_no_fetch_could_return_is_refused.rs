//! A record is read whole or not at all, so the largest record a broker accepts is the largest
//! FETCH payload minus its 8-byte header (`MAX_RECORD_PAYLOAD_BYTES`, 8 MiB − 26), even when the
//! segment could hold more. A PRODUCE to a one-character topic has room for a payload 2 bytes
//! larger; the broker refuses one with RECORD_TOO_LARGE (under every ack policy, ack NONE
//! included), writes nothing, and keeps the connection. A record of exactly the limit is
//! accepted and a FETCH returns it whole.

mod support;

use booblik_protocol::{
    AckPolicy, ErrorCode, MAX_FETCH_PAYLOAD_BYTES, MAX_FRAME_BYTES, MAX_RECORD_PAYLOAD_BYTES,
};
use support::{TestBroker, fetch_request, payloads, produce_request, raw_frame, topic};

/// Segments larger than any frame: only the FETCH limit can refuse the records below.
const SEGMENT_BYTES: u64 = 16 * 1024 * 1024;

/// A PRODUCE v1 frame to topic `a`, partition 0, carrying one record of `payload_len` bytes.
fn produce_frame(correlation_id: i32, ack: AckPolicy, payload_len: usize) -> Vec<u8> {
    let mut body = Vec::with_capacity(16 + payload_len);
    body.extend_from_slice(&1u16.to_be_bytes());
    body.extend_from_slice(b"a");
    body.extend_from_slice(&0i32.to_be_bytes()); // partition
    body.push(ack as u8);
    body.extend_from_slice(&1i32.to_be_bytes()); // one record
    body.extend_from_slice(&(payload_len as i32).to_be_bytes());
    body.resize(body.len() + payload_len, 0xAB);
    raw_frame(1, 1, correlation_id, &body)
}

#[tokio::test]
async fn the_largest_fetchable_record_is_accepted_and_fetched_whole_and_larger_ones_are_refused() {
    let broker = TestBroker::start_with(|config| {
        config.topics = vec![(topic("a"), 1)];
        config.storage.segment_bytes = SEGMENT_BYTES;
    })
    .await;
    let mut conn = broker.connect().await;

    // One byte over the limit, and the largest record a frame to this topic can carry.
    for (id, payload_len) in [
        (1, MAX_RECORD_PAYLOAD_BYTES + 1),
        (2, MAX_RECORD_PAYLOAD_BYTES + 2),
    ] {
        for ack in [AckPolicy::None, AckPolicy::Written, AckPolicy::Forced] {
            let frame = produce_frame(id, ack, payload_len);
            assert!(frame.len() - 4 <= MAX_FRAME_BYTES, "a legal frame");
            conn.send_raw(&frame).await;
            let answer = conn.recv().await;
            assert_eq!(answer.header.correlation_id, id);
            assert_eq!(
                answer.header.error_code,
                ErrorCode::RecordTooLarge,
                "{payload_len} bytes under {ack:?}"
            );
        }
    }
    // Nothing was written, and the connection still serves.
    let empty = conn.fetch("a", 0, 0, i32::MAX).await.fetch();
    assert_eq!((empty.high_watermark, empty.payload.len()), (0, 0));

    let largest = vec![0x5A; MAX_RECORD_PAYLOAD_BYTES];
    let produced = conn
        .call(&produce_request(3, "a", 0, AckPolicy::Written, &[&largest]))
        .await
        .produce();
    assert_eq!((produced.base_offset, produced.log_end_offset), (0, 1));

    let fetched = conn
        .call(&fetch_request(4, "a", 0, 0, i32::MAX, None))
        .await
        .fetch();
    assert_eq!(fetched.payload.len(), MAX_FETCH_PAYLOAD_BYTES);
    let records = payloads(&fetched);
    assert_eq!(records.len(), 1, "the record came back whole");
    assert!(records[0] == largest, "the payload changed");
    broker.broker.shutdown().await.unwrap();
}
