//! FETCH range rules: at the high watermark is an empty success, past it is OUT_OF_RANGE, and a
//! response may end in the middle of a record but never crosses a segment.

mod support;

use booblik_protocol::{ErrorCode, RecordScanner, ScanEnd};
use support::{TestBroker, payloads};

#[tokio::test]
async fn a_fetch_at_the_high_watermark_is_empty_and_past_it_is_out_of_range() {
    let broker = TestBroker::start().await;
    let mut conn = broker.connect().await;
    conn.produce("solo", 0, &[b"a", b"b", b"c"]).await;
    let at_end = conn.fetch("solo", 0, 3, 1024).await.fetch();
    assert_eq!(at_end.high_watermark, 3);
    assert!(at_end.payload.is_empty());
    let past = conn.fetch("solo", 0, 4, 1024).await;
    assert_eq!(past.header.error_code, ErrorCode::OffsetOutOfRange);
    // An empty partition: offset 0 is the high watermark.
    let empty = conn.fetch("events", 1, 0, 1024).await.fetch();
    assert_eq!((empty.high_watermark, empty.payload.len()), (0, 0));
}

#[tokio::test]
async fn max_bytes_cuts_a_response_in_the_middle_of_a_record() {
    let broker = TestBroker::start().await;
    let mut conn = broker.connect().await;
    conn.produce("solo", 0, &[&[1u8; 100], &[2u8; 100]]).await;
    // First record takes 108 bytes; 150 bytes end 42 bytes into the second.
    let cut = conn.fetch("solo", 0, 0, 150).await.fetch();
    assert_eq!(cut.payload.len(), 150);
    let mut scanner = RecordScanner::new(&cut.payload);
    assert_eq!(scanner.by_ref().count(), 1);
    assert_eq!(
        scanner.end(),
        Some(ScanEnd::Partial {
            position: 108,
            declared_len: Some(100),
            available: 42
        })
    );
    // Fetching from the second record's offset gets it whole.
    assert_eq!(
        payloads(&conn.fetch("solo", 0, 1, 150).await.fetch()),
        vec![vec![2u8; 100]]
    );
}

#[tokio::test]
async fn a_fetch_never_crosses_a_segment_boundary() {
    let broker = TestBroker::start().await;
    let mut conn = broker.connect().await;
    // 1 MiB segments; 40 records of 100 KiB fill several of them.
    let record = vec![9u8; 100 * 1024];
    for _ in 0..40 {
        conn.produce("solo", 0, &[&record]).await;
    }
    let mut offset = 0i64;
    let mut seen = 0;
    while offset < 40 {
        let fetch = conn.fetch("solo", 0, offset, 8 * 1024 * 1024).await.fetch();
        let got = payloads(&fetch);
        let mut scanner = RecordScanner::new(&fetch.payload);
        scanner.by_ref().for_each(drop);
        // Each response is whole records of one segment: a clean end, at most 1 MiB.
        assert_eq!(scanner.end(), Some(ScanEnd::Clean));
        assert!(fetch.payload.len() <= 1024 * 1024);
        assert!(
            !got.is_empty() && got.len() < 40,
            "one segment holds 10 of these records"
        );
        offset += got.len() as i64;
        seen += got.len();
    }
    assert_eq!(seen, 40);
}
