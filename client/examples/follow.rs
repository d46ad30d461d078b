//! Follows one partition forever, checkpointing its position in an in-memory offset store after
//! each batch (a real consumer would use `booblik_offset_store::FileOffsetStore`).
//!
//! ```text
//! BOOBLIK_BROKER=127.0.0.1:9092 cargo run -p booblik-client --example follow -- events 0
//! ```

use std::sync::Arc;

use booblik_client::checkpointing::Checkpointer;
use booblik_client::{Client, ConnectionConfig, ConsumerConfig, StartPosition};
use booblik_offset_store::InMemoryOffsetStore;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let broker = std::env::var("BOOBLIK_BROKER").unwrap_or_else(|_| "127.0.0.1:9092".into());
    let mut args = std::env::args().skip(1);
    let topic = args.next().unwrap_or_else(|| "events".into());
    let partition: i32 = args.next().map_or(Ok(0), |n| n.parse())?;

    let client = Client::connect(broker, ConnectionConfig::default()).await?;
    let checkpointer = Checkpointer::new(Arc::new(InMemoryOffsetStore::new()), "example");
    let consumer = checkpointer
        .consumer(
            &client,
            &topic,
            partition,
            StartPosition::Latest,
            ConsumerConfig::default(),
        )
        .await?;
    eprintln!(
        "following {topic}/{partition} from offset {}",
        consumer.position()
    );
    let mut follow = consumer.follow();
    checkpointer
        .run(&mut follow, |batch| async move {
            for record in &batch.records {
                println!(
                    "{}\t{}",
                    record.offset,
                    String::from_utf8_lossy(&record.payload)
                );
            }
            Ok::<(), std::convert::Infallible>(())
        })
        .await?;
    Ok(())
}
