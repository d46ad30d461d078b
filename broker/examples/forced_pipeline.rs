//! FORCED batching on one connection: records/s with 16 PRODUCEs in flight against 1 in flight
//! (10 records × 128 B per batch, ack FORCED), on an embedded broker writing to a temporary
//! directory (`--dir`, default the system temp dir: use a real disk, not tmpfs). Runs the two
//! alternately `--runs` times and prints each run, the medians and the min–max of the ratio.
//!
//! ```sh
//! cargo run --release -p booblik-broker --example forced_pipeline -- --runs 3 --seconds 3
//! ```
//!
//! A measurement for `docs/benchmarks.md`, not a test: `booblik-load produce` has no flag for
//! the in-flight count of its raw path yet.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use booblik_broker::{Broker, BrokerConfig, parse_topics};
use booblik_protocol::{
    AckPolicy, Decoded, ErrorCode, ProduceRequest, RecordSet, Request, RequestBody, TopicName,
    decode_response_frame,
};
use clap::Parser;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Parser)]
struct Args {
    /// Runs of each in-flight count, alternating.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Seconds per run.
    #[arg(long, default_value_t = 3)]
    seconds: u64,
    /// Records per batch.
    #[arg(long, default_value_t = 10)]
    records_per_batch: usize,
    /// Bytes per record.
    #[arg(long, default_value_t = 128)]
    record_bytes: usize,
    /// The deep pipeline's in-flight count (compared with 1).
    #[arg(long, default_value_t = 16)]
    in_flight: usize,
    /// Where the broker's data directory is made.
    #[arg(long, default_value_os_t = std::env::temp_dir())]
    dir: std::path::PathBuf,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let dir = tempfile::tempdir_in(&args.dir)?;
    let mut config = BrokerConfig {
        bind: "127.0.0.1:0".parse()?,
        topics: parse_topics("bench:1").map_err(anyhow::Error::msg)?,
        ..BrokerConfig::default()
    };
    config.storage.data_dir = dir.path().to_path_buf();
    let broker = Broker::start(config).await?;
    let addr = broker.local_addr();
    let payload = vec![0x42u8; args.record_bytes];
    let batch =
        RecordSet::from_payloads(std::iter::repeat_n(&payload[..], args.records_per_batch))?;
    let mut ratios = Vec::new();
    let (mut deep_rates, mut single_rates) = (Vec::new(), Vec::new());
    for run in 0..args.runs {
        let single = records_per_s(addr, &batch, 1, args.seconds).await?;
        let deep = records_per_s(addr, &batch, args.in_flight, args.seconds).await?;
        println!(
            "run {run}: 1 in flight {single:.0} records/s, {} in flight {deep:.0} records/s, ratio {:.1}",
            args.in_flight,
            deep / single
        );
        single_rates.push(single);
        deep_rates.push(deep);
        ratios.push(deep / single);
    }
    println!(
        "median: 1 in flight {:.0} records/s, {} in flight {:.0} records/s, ratio {:.1} (min {:.1}, max {:.1})",
        median(&mut single_rates),
        args.in_flight,
        median(&mut deep_rates),
        median(&mut ratios),
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratios.iter().copied().fold(0.0, f64::max),
    );
    broker.shutdown().await?;
    Ok(())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// FORCED batches on one fresh connection for `seconds`, keeping `in_flight` unanswered.
async fn records_per_s(
    addr: std::net::SocketAddr,
    batch: &RecordSet,
    in_flight: usize,
    seconds: u64,
) -> anyhow::Result<f64> {
    let mut stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let mut frame = Vec::new();
    Request {
        correlation_id: 1,
        body: RequestBody::Produce(ProduceRequest {
            topic: TopicName::new("bench")?,
            partition: 0,
            ack: AckPolicy::Forced,
            records: batch.clone(),
        }),
    }
    .encode(&mut frame);
    let mut inbuf = Vec::new();
    let (mut sent, mut answered) = (0u64, 0u64);
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    while Instant::now() < deadline || answered < sent {
        while Instant::now() < deadline && sent - answered < in_flight as u64 {
            stream.write_all(&frame).await?;
            sent += 1;
        }
        while let Decoded::Complete { value, used } = decode_response_frame(&inbuf)? {
            if value.header.error_code != ErrorCode::None {
                bail!("refused: {:?}", value.header.error_code);
            }
            inbuf.drain(..used);
            answered += 1;
        }
        if answered < sent && stream.read_buf(&mut inbuf).await.context("reading")? == 0 {
            bail!("the broker closed the connection");
        }
    }
    let records = answered * batch.count() as u64;
    Ok(records as f64 / started.elapsed().as_secs_f64())
}
