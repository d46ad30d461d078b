//! Reads one partition from the beginning up to its current high watermark, then exits with a
//! summary.
//!
//! ```text
//! BOOBLIK_BROKER=127.0.0.1:9092 cargo run -p booblik-client --example replay -- events 0
//! ```

use booblik_client::{Client, ConnectionConfig, ConsumerConfig, StartPosition};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let broker = std::env::var("BOOBLIK_BROKER").unwrap_or_else(|_| "127.0.0.1:9092".into());
    let mut args = std::env::args().skip(1);
    let topic = args.next().unwrap_or_else(|| "events".into());
    let partition: i32 = args.next().map_or(Ok(0), |n| n.parse())?;

    let client = Client::connect(broker, ConnectionConfig::default()).await?;
    let consumer = client
        .consumer(
            &topic,
            partition,
            StartPosition::Earliest,
            ConsumerConfig::default(),
        )
        .await?;
    let mut replay = consumer.replay().await?;
    let (mut records, mut bytes) = (0u64, 0usize);
    while let Some(batch) = replay.next_batch().await? {
        for record in &batch.records {
            println!(
                "{}\t{}",
                record.offset,
                String::from_utf8_lossy(&record.payload)
            );
            records += 1;
            bytes += record.payload.len();
        }
    }
    eprintln!(
        "{topic}/{partition}: {records} records, {bytes} payload bytes, up to offset {}",
        replay.end_offset()
    );
    Ok(())
}
