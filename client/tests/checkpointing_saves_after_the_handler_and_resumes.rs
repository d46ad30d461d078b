//! The checkpointing adapter saves a batch's `next_offset` only after the handler finished it
//! (at-least-once), and a restarted consumer resumes from the saved position.

mod support;

use std::sync::{Arc, Mutex};

use booblik_client::checkpointing::{CheckpointError, Checkpointer};
use booblik_client::{Client, ConsumerConfig, StartPosition};
use booblik_offset_store::{InMemoryOffsetStore, OffsetStore};
use booblik_protocol::TopicName;
use support::{FakeBroker, test_config, within};

/// Two 2-byte records per fetch.
const MAX_BYTES: i32 = 20;

#[derive(Debug)]
struct Refused;

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("refused on purpose")
    }
}

#[tokio::test]
async fn positions_are_saved_after_each_handled_batch_and_a_restart_resumes_there() {
    let broker = FakeBroker::start(&[("t", 1)]).await;
    broker.append("t", 0, &[b"r0", b"r1", b"r2", b"r3", b"r4", b"r5"]);
    let client = Client::connect(broker.addr(), test_config()).await.unwrap();
    let store = Arc::new(InMemoryOffsetStore::new());
    let checkpointer = Checkpointer::new(store.clone(), "billing");
    let topic = TopicName::new("t").unwrap();
    let config = ConsumerConfig {
        max_bytes: MAX_BYTES,
        ..ConsumerConfig::default()
    };

    // First run: the handler fails on the batch holding offset 4.
    let consumer = checkpointer
        .consumer(&client, "t", 0, StartPosition::Earliest, config.clone())
        .await
        .unwrap();
    assert_eq!(
        consumer.position(),
        0,
        "nothing saved: the fallback applies"
    );
    let mut replay = consumer.replay().await.unwrap();
    let handled = Arc::new(Mutex::new(Vec::new()));
    let result = within(
        "the first run",
        checkpointer.run(&mut replay, |batch| {
            let handled = Arc::clone(&handled);
            let store = Arc::clone(&store);
            async move {
                // Saving comes after the handler: the store still holds the previous position.
                let saved = store.load("billing", "t", 0).await.unwrap();
                let first = batch.first_offset().unwrap();
                assert_eq!(saved, if first == 0 { None } else { Some(first) });
                if batch.records.iter().any(|r| r.offset == 4) {
                    return Err(Refused);
                }
                handled
                    .lock()
                    .unwrap()
                    .extend(batch.records.iter().map(|r| r.offset));
                Ok(())
            }
        }),
    )
    .await;
    assert!(matches!(result, Err(CheckpointError::Handler(Refused))));
    assert_eq!(*handled.lock().unwrap(), vec![0, 1, 2, 3]);
    assert_eq!(
        checkpointer.load(&topic, 0).await.unwrap(),
        Some(4),
        "the failed batch must not be saved"
    );

    // Restart: resume at the saved position and finish.
    let consumer = checkpointer
        .consumer(&client, "t", 0, StartPosition::Earliest, config)
        .await
        .unwrap();
    assert_eq!(consumer.position(), 4);
    let mut replay = consumer.replay().await.unwrap();
    let resumed = Arc::new(Mutex::new(Vec::new()));
    within(
        "the second run",
        checkpointer.run(&mut replay, |batch| {
            let resumed = Arc::clone(&resumed);
            async move {
                resumed
                    .lock()
                    .unwrap()
                    .extend(batch.records.iter().map(|r| r.offset));
                Ok::<(), Refused>(())
            }
        }),
    )
    .await
    .unwrap();
    assert_eq!(*resumed.lock().unwrap(), vec![4, 5]);
    assert_eq!(checkpointer.load(&topic, 0).await.unwrap(), Some(6));
}
