//! A booblik partition log reopens its connections after the broker restarts, and says so in
//! `reconnects()`: the signal the follow consumer and the queue's followers re-check their last
//! record on (a restarted broker may have lost an unsynced tail).

use booblik_client::{Client, ConnectionConfig};
use booblik_samples::engine::{Ack, BooblikEngine, LogEngine, ReadLimits};
use booblik_samples::support::embedded_broker;
use bytes::Bytes;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_broker_is_reached_again_and_counted_as_a_reconnect() {
    let dir = tempfile::tempdir().unwrap();
    let broker = embedded_broker::start(dir.path(), "127.0.0.1:0".parse().unwrap(), "restarts:1")
        .await
        .unwrap();
    let addr = broker.local_addr();
    let client = Client::connect(addr.to_string(), ConnectionConfig::default())
        .await
        .unwrap();
    let engine = BooblikEngine::new(client);
    let log = engine.open("restarts", 0).await.unwrap();
    let limits = ReadLimits {
        max_records: 10,
        max_bytes: 1024 * 1024,
        wait: std::time::Duration::ZERO,
    };
    log.append(&[Bytes::from_static(b"before")], Ack::Forced)
        .await
        .unwrap();
    assert_eq!(log.read(0, limits).await.unwrap().records.len(), 1);
    assert_eq!(log.reconnects(), 0, "nothing was reopened yet");

    broker.shutdown().await.unwrap();
    let broker = embedded_broker::start(dir.path(), addr, "restarts:1")
        .await
        .unwrap();

    // The first calls over the dead sockets may fail (that is how the client learns they are
    // dead); within a few attempts both kinds of call are served again over new connections.
    let mut appended = None;
    for _ in 0..50 {
        if let Ok(answer) = log
            .append(&[Bytes::from_static(b"after")], Ack::Forced)
            .await
        {
            appended = Some(answer);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(appended.expect("served after the restart").offsets, vec![1]);
    let mut read = None;
    for _ in 0..50 {
        if let Ok(batch) = log.read(0, limits).await {
            read = Some(batch);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let payloads: Vec<Bytes> = read
        .expect("read after the restart")
        .records
        .into_iter()
        .map(|record| record.payload)
        .collect();
    assert_eq!(payloads, vec![&b"before"[..], &b"after"[..]]);
    assert_eq!(
        log.reconnects(),
        2,
        "the read and the write connection were each reopened once"
    );
    broker.shutdown().await.unwrap();
}
