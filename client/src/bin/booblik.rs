//! `booblik`: the command line for people.
//!
//! ```text
//! booblik [--broker host:port] metadata [topic]
//! booblik produce <topic> [--partition N | --key K] [--ack none|written|forced] [--file PATH]
//! booblik consume <topic> [--partition N] [--from earliest|latest|OFFSET] [--follow]
//!                         [--max N] [--format text|hex] [--offsets]
//! ```
//!
//! The broker comes from `--broker`, else `BOOBLIK_BROKER`, else `127.0.0.1:9092`. `produce`
//! sends each line of stdin (or `--file`) as one record, through the batching producer; empty
//! lines are skipped, since records are never empty. `consume` without `--partition` reads
//! every partition: one after the other when replaying, interleaved when following. Logs go to
//! stderr (`RUST_LOG=debug` for more).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use booblik_client::{
    AckPolicy, Batch, Client, ClientError, ConnectionConfig, ConsumerConfig, Delivery,
    ProducerConfig, StartPosition,
};
use clap::{Parser, Subcommand, ValueEnum};
use futures::stream::{FuturesUnordered, SelectAll};
use futures::{Stream, StreamExt};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};

/// Default broker address.
const DEFAULT_BROKER: &str = "127.0.0.1:9092";
/// Deliveries awaited at once by `produce` before it reads more input.
const MAX_PENDING_DELIVERIES: usize = 10_000;

#[derive(Debug, Parser)]
#[command(name = "booblik", version, about = "Talk to a booblik broker")]
struct Cli {
    /// Broker address, host:port.
    #[arg(long, env = "BOOBLIK_BROKER", default_value = DEFAULT_BROKER, global = true)]
    broker: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show topics, partitions and their offsets.
    Metadata {
        /// Only this topic (default: all).
        topic: Option<String>,
    },
    /// Send each input line as one record.
    Produce {
        /// The topic.
        topic: String,
        /// Send every record to this partition.
        #[arg(long, conflicts_with = "key")]
        partition: Option<i32>,
        /// Send every record with this key (its partition by the shared FNV-1a partitioner).
        #[arg(long)]
        key: Option<String>,
        /// When the broker answers.
        #[arg(long, default_value = "written")]
        ack: AckPolicy,
        /// Read lines from this file instead of stdin.
        #[arg(long)]
        file: Option<PathBuf>,
    },
    /// Print records.
    Consume {
        /// The topic.
        topic: String,
        /// Only this partition (default: all).
        #[arg(long)]
        partition: Option<i32>,
        /// Where to start: earliest, latest or an offset.
        #[arg(long, default_value = "earliest", value_parser = parse_start)]
        from: StartPosition,
        /// Keep waiting for new records instead of stopping at the end.
        #[arg(long)]
        follow: bool,
        /// Stop after this many records.
        #[arg(long)]
        max: Option<u64>,
        /// How to print payloads.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Prefix each record with `partition:offset` and a tab.
        #[arg(long)]
        offsets: bool,
        /// Upper bound on one fetch, in bytes.
        #[arg(long, default_value_t = booblik_client::consumer::config::DEFAULT_MAX_BYTES)]
        max_bytes: i32,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    /// The payload as UTF-8 (invalid bytes replaced).
    Text,
    /// The payload in hex.
    Hex,
}

fn parse_start(value: &str) -> Result<StartPosition, String> {
    match value {
        "earliest" => Ok(StartPosition::Earliest),
        "latest" => Ok(StartPosition::Latest),
        offset => offset
            .parse::<i64>()
            .ok()
            .filter(|o| *o >= 0)
            .map(StartPosition::At)
            .ok_or_else(|| format!("{value:?} is not earliest, latest or an offset")),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("booblik: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let client = Client::connect(cli.broker.clone(), ConnectionConfig::default())
        .await
        .with_context(|| format!("connecting to {}", cli.broker))?;
    match cli.command {
        Command::Metadata { topic } => metadata(&client, topic).await,
        Command::Produce {
            topic,
            partition,
            key,
            ack,
            file,
        } => {
            let config = ProducerConfig {
                ack,
                ..ProducerConfig::default()
            };
            let target = match (partition, key) {
                (Some(partition), _) => Target::Partition(partition),
                (None, Some(key)) => Target::Key(key.into_bytes()),
                (None, None) => Target::RoundRobin,
            };
            let input: Box<dyn AsyncBufRead + Unpin + Send> = match file {
                Some(path) => Box::new(BufReader::new(
                    tokio::fs::File::open(&path)
                        .await
                        .with_context(|| format!("opening {}", path.display()))?,
                )),
                None => Box::new(BufReader::new(tokio::io::stdin())),
            };
            produce(&client, &topic, config, &target, input).await
        }
        Command::Consume {
            topic,
            partition,
            from,
            follow,
            max,
            format,
            offsets,
            max_bytes,
        } => {
            let config = ConsumerConfig {
                max_bytes,
                ..ConsumerConfig::default()
            };
            let output = Output {
                format,
                offsets,
                max,
                printed: 0,
            };
            consume(&client, &topic, partition, from, follow, config, output).await
        }
    }
}

async fn metadata(client: &Client, topic: Option<String>) -> anyhow::Result<()> {
    let topics = match topic {
        Some(name) => vec![booblik_protocol::TopicName::new(name)?],
        None => Vec::new(),
    };
    let response = client.metadata(&topics).await?;
    println!("topic\tpartition\tlogStartOffset\thighWatermark");
    for topic in response.topics {
        for p in topic.partitions {
            println!(
                "{}\t{}\t{}\t{}",
                topic.name, p.id, p.log_start_offset, p.high_watermark
            );
        }
    }
    Ok(())
}

enum Target {
    Partition(i32),
    Key(Vec<u8>),
    RoundRobin,
}

async fn produce(
    client: &Client,
    topic: &str,
    config: ProducerConfig,
    target: &Target,
    input: Box<dyn AsyncBufRead + Unpin + Send>,
) -> anyhow::Result<()> {
    let ack = config.ack;
    let producer = client.producer(topic, config).await?;
    let mut lines = input.lines();
    let mut pending: FuturesUnordered<Delivery> = FuturesUnordered::new();
    let mut tally = Tally::default();
    while let Some(line) = lines.next_line().await.context("reading input")? {
        if line.is_empty() {
            tally.skipped += 1;
            continue;
        }
        let delivery = match target {
            Target::Partition(partition) => producer.send_to(*partition, line).await,
            Target::Key(key) => producer.send(Some(key), line).await,
            Target::RoundRobin => producer.send(None, line).await,
        };
        match delivery {
            Ok(delivery) => pending.push(delivery),
            Err(error) => tally.fail(&error),
        }
        while pending.len() >= MAX_PENDING_DELIVERIES {
            if let Some(outcome) = pending.next().await {
                tally.record(outcome);
            }
        }
    }
    producer.flush().await?;
    while let Some(outcome) = pending.next().await {
        tally.record(outcome);
    }
    eprintln!(
        "produced {} records to {topic} (ack {}){}{}",
        tally.sent,
        ack.name(),
        if tally.skipped > 0 {
            format!(", skipped {} empty lines", tally.skipped)
        } else {
            String::new()
        },
        if tally.failed > 0 {
            format!(", {} failed", tally.failed)
        } else {
            String::new()
        },
    );
    if let Some(error) = tally.first_error {
        bail!("{} records failed; the first: {error}", tally.failed);
    }
    Ok(())
}

#[derive(Default)]
struct Tally {
    sent: u64,
    skipped: u64,
    failed: u64,
    first_error: Option<ClientError>,
}

impl Tally {
    fn record(&mut self, outcome: Result<Option<i64>, ClientError>) {
        match outcome {
            Ok(_) => self.sent += 1,
            Err(error) => self.fail(&error),
        }
    }

    fn fail(&mut self, error: &ClientError) {
        self.failed += 1;
        self.first_error.get_or_insert_with(|| error.clone());
    }
}

struct Output {
    format: Format,
    offsets: bool,
    max: Option<u64>,
    printed: u64,
}

impl Output {
    /// Prints a batch; false once `max` records were printed.
    fn print(&mut self, batch: &Batch) -> bool {
        for record in &batch.records {
            if self.max.is_some_and(|max| self.printed >= max) {
                return false;
            }
            if self.offsets {
                print!("{}:{}\t", batch.partition, record.offset);
            }
            match self.format {
                Format::Text => println!("{}", String::from_utf8_lossy(&record.payload)),
                Format::Hex => println!("{}", hex::encode(&record.payload)),
            }
            self.printed += 1;
        }
        self.max.is_none_or(|max| self.printed < max)
    }
}

async fn consume(
    client: &Client,
    topic: &str,
    partition: Option<i32>,
    from: StartPosition,
    follow: bool,
    config: ConsumerConfig,
    mut output: Output,
) -> anyhow::Result<()> {
    let partitions = match partition {
        Some(partition) => vec![partition],
        None => client
            .topic(topic)
            .await?
            .partitions()
            .iter()
            .map(|p| p.id)
            .collect(),
    };
    if follow {
        let mut streams = SelectAll::new();
        for partition in partitions {
            let consumer = client
                .consumer(topic, partition, from, config.clone())
                .await?;
            streams.push(boxed(consumer.follow().into_stream()));
        }
        while let Some(batch) = streams.next().await {
            if !output.print(&batch?) {
                break;
            }
        }
    } else {
        'partitions: for partition in partitions {
            let consumer = client
                .consumer(topic, partition, from, config.clone())
                .await?;
            let mut replay = consumer.replay().await?;
            while let Some(batch) = replay.next_batch().await? {
                if !output.print(&batch) {
                    break 'partitions;
                }
            }
        }
    }
    Ok(())
}

fn boxed(
    stream: impl Stream<Item = Result<Batch, ClientError>> + Send + 'static,
) -> std::pin::Pin<Box<dyn Stream<Item = Result<Batch, ClientError>> + Send>> {
    Box::pin(stream)
}
