//! Group commit: every FORCED append waiting at the same time is covered by one fsync, so
//! barriers are far fewer than producers.

mod storage_support;

use std::sync::Arc;
use std::time::Duration;

use booblik_protocol::AckPolicy;
use storage_support::{
    MODES, config, config_with_sim, open, partition, payload, read_all, records,
};

const PRODUCERS: u64 = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_forced_producers_cause_at_least_ten_times_fewer_fsyncs() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let (mut config, disk) = config_with_sim(dir.path(), mode, 1024 * 1024);
        config.writer_queue_depth = 256;
        let storage = open(&config).unwrap();
        let partition = partition(&storage);
        let fsyncs_before = partition.stats().fsyncs;

        // Stall the disk so that all 200 producers are waiting at the same time: the writer
        // stops inside the first batch's write, the others queue behind it.
        let gate = disk.stall();
        let mut tasks = Vec::new();
        for producer in 0..PRODUCERS {
            let partition = Arc::clone(&partition);
            tasks.push(tokio::spawn(async move {
                partition
                    .append(records(&[payload(producer, 40)]), AckPolicy::Forced)
                    .await
                    .unwrap()
                    .unwrap()
            }));
        }
        wait_until(|| partition.stats().queued_appends == PRODUCERS as usize).await;
        drop(gate);

        let mut bases = Vec::new();
        for task in tasks {
            bases.push(task.await.unwrap().base_offset);
        }
        bases.sort_unstable();
        assert_eq!(bases, (0..PRODUCERS as i64).collect::<Vec<_>>());

        let stats = partition.stats();
        let fsyncs = stats.fsyncs - fsyncs_before;
        assert!(fsyncs >= 1, "{mode:?}: FORCED must fsync");
        assert!(
            fsyncs * 10 <= PRODUCERS,
            "{mode:?}: {fsyncs} fsyncs for {PRODUCERS} FORCED producers"
        );
        assert_eq!(read_all(&partition).len(), PRODUCERS as usize);
        storage.close().unwrap();
    }
}

#[tokio::test]
async fn a_forced_append_alone_gets_its_own_fsync_before_its_answer() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let storage = open(&config(dir.path(), mode, 1024 * 1024)).unwrap();
        let partition = partition(&storage);
        let before = partition.stats();
        partition
            .append(records(&[b"durable"]), AckPolicy::Forced)
            .await
            .unwrap();
        let after = partition.stats();
        assert_eq!(after.fsyncs - before.fsyncs, 1, "{mode:?}");
        assert_eq!(after.forced_groups - before.forced_groups, 1, "{mode:?}");
        // WRITTEN does not fsync.
        partition
            .append(records(&[b"written"]), AckPolicy::Written)
            .await
            .unwrap();
        assert_eq!(partition.stats().fsyncs, after.fsyncs, "{mode:?}");
        storage.close().unwrap();
    }
}

async fn wait_until(condition: impl Fn() -> bool) {
    // A named bound on the wait: 10 s in steps of 1 ms.
    for _ in 0..10_000 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("condition not reached in 10 s");
}
