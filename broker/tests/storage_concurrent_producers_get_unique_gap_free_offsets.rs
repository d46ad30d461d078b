//! One writer per partition: producers appending at the same time get unique, gap-free offsets.

mod storage_support;

use std::sync::Arc;

use booblik_protocol::AckPolicy;
use storage_support::{MODES, config, open, partition, payload, read_all, records};

const PRODUCERS: u64 = 64;
const BATCHES_PER_PRODUCER: u64 = 25;
const RECORDS_PER_BATCH: u64 = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_producers_of_25_batches_of_4_records_get_6400_unique_gap_free_offsets() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(dir.path(), mode, 64 * 1024);
        config.writer_queue_depth = 16; // small, so producers also meet backpressure
        let storage = open(&config).unwrap();
        let partition = partition(&storage);
        let barrier = Arc::new(tokio::sync::Barrier::new(PRODUCERS as usize));
        let mut tasks = Vec::new();
        for producer in 0..PRODUCERS {
            let partition = Arc::clone(&partition);
            let barrier = Arc::clone(&barrier);
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                let mut bases = Vec::new();
                for batch in 0..BATCHES_PER_PRODUCER {
                    let payloads: Vec<Vec<u8>> = (0..RECORDS_PER_BATCH)
                        .map(|r| {
                            let id =
                                (producer * BATCHES_PER_PRODUCER + batch) * RECORDS_PER_BATCH + r;
                            payload(id, 24)
                        })
                        .collect();
                    let appended = partition
                        .append(records(&payloads), AckPolicy::Written)
                        .await
                        .unwrap()
                        .unwrap();
                    assert_eq!(appended.log_end_offset - appended.base_offset, 4);
                    bases.push((appended.base_offset, payloads));
                }
                bases
            }));
        }
        let mut batches = Vec::new();
        for task in tasks {
            batches.extend(task.await.unwrap());
        }
        batches.sort_by_key(|(base, _)| *base);
        let bases: Vec<i64> = batches.iter().map(|(base, _)| *base).collect();
        let expected: Vec<i64> = (0..(PRODUCERS * BATCHES_PER_PRODUCER) as i64)
            .map(|n| n * 4)
            .collect();
        assert_eq!(
            bases, expected,
            "{mode:?}: base offsets unique and gap-free"
        );
        assert_eq!(partition.high_watermark(), 6400, "{mode:?}");

        // Every batch's records sit at its offsets.
        let log = read_all(&partition);
        assert_eq!(log.len(), 6400);
        for (base, payloads) in &batches {
            for (n, expected) in payloads.iter().enumerate() {
                assert_eq!(&log[*base as usize + n].1, expected, "{mode:?}");
            }
        }
        assert_eq!(partition.stats().appended_records, 6400);
        storage.close().unwrap();
    }
}
