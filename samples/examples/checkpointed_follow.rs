//! The smallest at-least-once consumer: follow one partition, save the position after each batch,
//! resume from it on the next start. Copy this; `src/events/follow.rs` is the same loop with
//! stats, order checks, retries and a clean stop around it.
//!
//! ```sh
//! cargo run -p booblik-broker &                       # a broker on 127.0.0.1:9092
//! cargo run -p booblik-samples --bin publisher -- --count 100
//! cargo run -p booblik-samples --example checkpointed_follow   # Ctrl-C, run again: it resumes
//! ```

use std::convert::Infallible;
use std::sync::Arc;

use booblik_client::checkpointing::Checkpointer;
use booblik_client::{Client, ConnectionConfig, ConsumerConfig, StartPosition};
use booblik_offset_store::FileOffsetStore;
use booblik_samples::events::UserEvent;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let broker = std::env::var("BOOBLIK_BROKER").unwrap_or_else(|_| "127.0.0.1:9092".into());
    let client = Client::connect(broker, ConnectionConfig::default()).await?;

    // Positions are saved under a consumer name, per topic and partition.
    let store = Arc::new(FileOffsetStore::open("./offsets").await?);
    let checkpointer = Checkpointer::new(store, "example");

    // At the saved position, or at the earliest offset when nothing was saved yet.
    let consumer = checkpointer
        .consumer(
            &client,
            "events",
            0,
            StartPosition::Earliest,
            ConsumerConfig::default(),
        )
        .await?;
    println!("starting at offset {}", consumer.position());

    // Handle the batch, *then* save its next_offset: a crash in between repeats the batch on the
    // next start (at-least-once) and never skips it.
    let mut follow = consumer.follow();
    checkpointer
        .run(&mut follow, |batch| async move {
            for record in &batch.records {
                match UserEvent::decode(&record.payload) {
                    Ok(event) => println!(
                        "{} {} #{} {:?}",
                        record.offset, event.user_id, event.seq, event.kind
                    ),
                    Err(error) => println!("{} not an event: {error}", record.offset),
                }
            }
            Ok::<(), Infallible>(())
        })
        .await?;
    Ok(())
}
