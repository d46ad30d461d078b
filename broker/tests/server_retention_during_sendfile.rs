//! A segment being sent by `sendfile` while retention drops it: the reader gets every byte
//! intact, and the file is unlinked only after the last byte is sent.
//!
//! The payload (8 MiB) is larger than the kernel's socket buffers can absorb (the send buffer
//! autotunes to at most `tcp_wmem` max, 4 MiB by default, and the reader's receive buffer is
//! made tiny), so `sendfile` is still running when retention drops the segment.

mod support;

use std::time::Duration;

use booblik_protocol::FetchResponse;
use booblik_protocol::WireMessage;
use support::{RawConn, TestBroker, fetch_request, payloads};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpSocket;

const SEGMENT_BYTES: u64 = 8 * 1024 * 1024;
const PER_SEGMENT: u8 = 80;

fn record(i: u8) -> Vec<u8> {
    vec![i; 100 * 1024]
}

fn segment_files(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("solo-0"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_segment_being_sent_survives_retention_until_the_last_byte() {
    let broker = TestBroker::start_with(|c| {
        c.storage.segment_bytes = SEGMENT_BYTES;
        c.storage.retention_bytes = Some(SEGMENT_BYTES);
    })
    .await;
    let mut producer = broker.connect().await;
    // 80 records of 100 KiB fill the first 8 MiB segment; the 81st rolls to a new one.
    for i in 0..PER_SEGMENT {
        producer.produce("solo", 0, &[&record(i)]).await;
    }

    // The send buffer must not be able to absorb the whole payload, or sendfile would finish
    // (and release the segment) before retention runs, and the test would prove nothing.
    let wmem = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_wmem").unwrap();
    let wmem_max: u64 = wmem.split_whitespace().last().unwrap().parse().unwrap();
    assert!(
        wmem_max < SEGMENT_BYTES,
        "net.ipv4.tcp_wmem max ({wmem_max}) must be below the {SEGMENT_BYTES}-byte payload for this test"
    );

    // A reader with a tiny receive buffer, which does not read yet: sendfile stalls midway.
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(broker.broker.local_addr()).await.unwrap();
    let mut request = Vec::new();
    fetch_request(1, "solo", 0, 0, 8 * 1024 * 1024, None).encode(&mut request);
    stream.write_all(&request).await.unwrap();
    // The answer's first bytes (its header, written before the sendfile starts) mean the broker
    // holds the slice, and with it the segment: only now may retention run.
    let mut first = [0u8; 1];
    let peeked = tokio::time::timeout(Duration::from_secs(30), stream.peek(&mut first))
        .await
        .expect("the broker did not start answering the FETCH")
        .unwrap();
    assert_eq!(peeked, 1);
    let mut slow = RawConn::from_stream(stream);

    // Three more segments, then retention: the first segment (the one being sent) goes.
    for i in PER_SEGMENT..PER_SEGMENT * 3 {
        producer.produce("solo", 0, &[&record(i)]).await;
    }
    let partition = std::sync::Arc::clone(broker.broker.storage().partition("solo", 0).unwrap());
    let dropped = partition.enforce_retention().await.unwrap();
    assert!(dropped >= 1, "retention dropped nothing");
    let meta = producer.metadata(&["solo"]).await.metadata();
    assert!(
        meta.topics[0].partitions[0].log_start_offset >= i64::from(PER_SEGMENT),
        "logStartOffset did not move"
    );
    // Offset 0 is gone from the log for everyone else...
    let gone = producer.fetch("solo", 0, 0, 1024).await;
    assert_eq!(
        gone.header.error_code,
        booblik_protocol::ErrorCode::OffsetOutOfRange
    );
    // ...but its file still exists (renamed), because the slow reader pins it.
    assert!(
        segment_files(broker.dir.path())
            .iter()
            .any(|n| n.starts_with("00000000000000000000")),
        "the pinned segment was unlinked early: {:?}",
        segment_files(broker.dir.path())
    );

    // Now read: every byte of the first segment, intact.
    let response = slow.recv().await;
    let fetched = FetchResponse::decode(&response.body).unwrap().0;
    let expected: Vec<Vec<u8>> = (0..PER_SEGMENT).map(record).collect();
    assert_eq!(payloads(&fetched), expected);

    // Once the send finished and the slice dropped, the file is unlinked.
    let mut unlinked = false;
    for _ in 0..100 {
        if !segment_files(broker.dir.path())
            .iter()
            .any(|n| n.starts_with("00000000000000000000"))
        {
            unlinked = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        unlinked,
        "segment file left behind: {:?}",
        segment_files(broker.dir.path())
    );
}
