//! Requests far larger than the socket's send buffer, from many tasks at once on one
//! connection: each must reach the broker whole, and a task's requests in the order it
//! submitted them, whether its caller wrote it (on an idle connection, § Writing through in
//! `writer.rs`) or the writer task did, across writes the socket takes only in part. A frame
//! interleaved with another, bytes lost or written twice, or a request overtaking an earlier one
//! of the same task shows up here as a record that is torn, missing or out of its task's order.
//! (That a caller's own partial write leaves exactly the rest for the writer task is checked
//! deterministically by the unit tests in `writer.rs`: here only the first request of the run
//! is written through, and the socket may take it whole.)

mod support;

use booblik_client::Connection;
use booblik_protocol::{AckPolicy, RecordSet, TopicName};
use support::{FakeBroker, test_config, within};

const TASKS: usize = 8;
const REQUESTS_PER_TASK: usize = 4;
/// One record per request: 512 KiB, far more than a fresh loopback socket takes at once.
const RECORD_BYTES: usize = 512 * 1024;

/// Record `seq` of task `task`: its name, then a byte pattern of its own.
fn payload(task: usize, seq: usize) -> Vec<u8> {
    let mut bytes = format!("task-{task}-seq-{seq}:").into_bytes();
    let fill = (task * REQUESTS_PER_TASK + seq) as u8;
    bytes.resize(RECORD_BYTES, fill);
    bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_larger_than_the_send_buffer_arrive_whole_and_in_each_task_s_order() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    let connection = Connection::connect(&broker.addr(), test_config())
        .await
        .unwrap();
    let topic = TopicName::new("t").unwrap();

    let tasks = (0..TASKS).map(|task| {
        let connection = connection.clone();
        let topic = topic.clone();
        tokio::spawn(async move {
            // Half the tasks send ack NONE: their callers are told "written" by whoever
            // finished their frame.
            let ack = if task % 2 == 0 {
                AckPolicy::Written
            } else {
                AckPolicy::None
            };
            let mut answers = Vec::new();
            // Submitted back to back, without waiting for the answers in between.
            for seq in 0..REQUESTS_PER_TASK {
                let records = RecordSet::from_payloads([payload(task, seq).as_slice()]).unwrap();
                let answer = connection
                    .submit_produce(&topic, 0, ack, records)
                    .await
                    .unwrap();
                answers.push(answer);
            }
            for answer in answers {
                answer.wait().await.unwrap();
            }
        })
    });
    for task in within("every task's requests", futures::future::join_all(tasks)).await {
        task.unwrap();
    }
    // The ack NONE requests have no answer to wait for: wait for the broker to hold them all.
    let total = (TASKS * REQUESTS_PER_TASK) as i64;
    within("the broker to hold every record", async {
        while broker.high_watermark("t", 0) < total {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;

    let records = broker.records("t", 0);
    assert_eq!(records.len(), TASKS * REQUESTS_PER_TASK);
    let mut next_seq = [0usize; TASKS];
    for record in &records {
        let name =
            String::from_utf8_lossy(&record[..record.iter().position(|&b| b == b':').unwrap()])
                .into_owned();
        let mut parts = name.split('-');
        let task: usize = parts.nth(1).unwrap().parse().unwrap();
        let seq: usize = parts.nth(1).unwrap().parse().unwrap();
        assert_eq!(
            seq, next_seq[task],
            "task {task}'s requests reached the broker out of order"
        );
        next_seq[task] += 1;
        assert!(
            *record == payload(task, seq),
            "{name}: the record arrived torn"
        );
    }
}
