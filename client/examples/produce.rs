//! Sends keyed events with the batching producer and prints where each landed.
//!
//! ```text
//! BOOBLIK_BROKER=127.0.0.1:9092 cargo run -p booblik-client --example produce -- events 10
//! ```

use booblik_client::{Client, ConnectionConfig, ProducerConfig};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let broker = std::env::var("BOOBLIK_BROKER").unwrap_or_else(|_| "127.0.0.1:9092".into());
    let mut args = std::env::args().skip(1);
    let topic = args.next().unwrap_or_else(|| "events".into());
    let count: usize = args.next().map_or(Ok(10), |n| n.parse())?;

    let client = Client::connect(broker, ConnectionConfig::default()).await?;
    let producer = client.producer(&topic, ProducerConfig::default()).await?;

    // Send everything first (sends only wait when the buffer is full), then collect offsets.
    let mut deliveries = Vec::with_capacity(count);
    for i in 0..count {
        let user = format!("user-{}", i % 3);
        let event = format!("{user} did thing {i}");
        deliveries.push((
            user.clone(),
            producer.send(Some(user.as_bytes()), event).await?,
        ));
    }
    for (user, delivery) in deliveries {
        let partition = delivery.partition();
        let offset = delivery.await?;
        println!("{user}: partition {partition}, offset {offset:?}");
    }
    Ok(())
}
