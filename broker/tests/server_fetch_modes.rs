//! Zero-copy (sendfile) and heap FETCH send identical bytes.

mod support;

use booblik_broker::{Broker, FetchMode};
use support::{RawConn, TestBroker, test_config};

#[tokio::test]
async fn zero_copy_and_heap_fetches_return_identical_bytes() {
    let first = TestBroker::start().await;
    let mut conn = first.connect().await;
    let records: Vec<Vec<u8>> = (0..200u32)
        .map(|i| vec![(i % 251) as u8; 1 + (i as usize * 37) % 3000])
        .collect();
    for chunk in records.chunks(10) {
        let refs: Vec<&[u8]> = chunk.iter().map(Vec::as_slice).collect();
        conn.produce("solo", 0, &refs).await;
    }
    let mut reads = Vec::new();
    for (offset, max_bytes) in [(0, 100_000), (17, 5_000), (150, 333), (199, 1 << 20)] {
        reads.push(conn.fetch("solo", 0, offset, max_bytes).await.fetch());
    }
    let TestBroker { broker, dir } = first;
    broker.shutdown().await.unwrap();

    let mut config = test_config(&dir);
    config.fetch_mode = FetchMode::Heap;
    let heap = Broker::start(config).await.unwrap();
    let mut conn = RawConn::connect(heap.local_addr()).await;
    for ((offset, max_bytes), zero_copy) in [(0, 100_000), (17, 5_000), (150, 333), (199, 1 << 20)]
        .into_iter()
        .zip(reads)
    {
        let from_heap = conn.fetch("solo", 0, offset, max_bytes).await.fetch();
        assert!(!from_heap.payload.is_empty());
        assert_eq!(from_heap, zero_copy, "offset {offset} maxBytes {max_bytes}");
    }
    heap.shutdown().await.unwrap();
}
