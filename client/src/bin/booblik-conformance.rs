//! `booblik-conformance`: this client behind the cross-language conformance contract
//! (SPEC §2), so an external harness can drive it exactly like the Go, Python, Node, .NET, Java
//! and Kotlin clients.
//!
//! ```text
//! BOOBLIK_BROKER=host:port booblik-conformance <verb> [args…]
//!
//! capabilities                                       roles=producer,consumer  name=booblik-rs
//! metadata <topic>                                   partition=<id> <logStartOffset> <highWatermark> …
//! produce <topic> <partition> <none|written|forced> <hex>[,<hex>…]
//!                                                    baseOffset=  logEndOffset=  (nothing for none)
//! produce-keyed <topic> <keyHex> <payloadHex>        partition=  baseOffset=
//! fetch <topic> <partition> <offset> <maxBytes>      highWatermark=  record=<hex> …
//!                                                    or recordExceedsMaxBytes=<payload size>
//! ```
//!
//! Exit 0 means the verb was carried out, including a refusal, printed as `error=NAME`. Refusals
//! the client itself enforces on the broker's behalf are printed with the code the broker would
//! have answered: an empty record, which the client never sends, is `error=CORRUPT_REQUEST`, as
//! is an invalid topic name. Usage errors exit 2 and failures of the client (no broker, a broken
//! connection, a corrupt record) exit 1, each with a message on stderr.
//!
//! `produce … none` returns as soon as the request is written: the broker sends no answer.
//! `produce-keyed` uses ack `written`. `fetch` sends FETCH v1 (no long poll).

use std::process::ExitCode;

use anyhow::{Context, anyhow};
use booblik_client::connection::MAX_FETCH_BYTES;
use booblik_client::{AckPolicy, Batch, ClientError, Connection, ConnectionConfig, Topic};
use booblik_protocol::{ErrorCode, FetchRequest, MAX_RECORD_PAYLOAD_BYTES, RecordSet, TopicName};

/// What `capabilities` calls this client.
const CLIENT_NAME: &str = "booblik-rs";
/// Where the broker's address comes from.
const BROKER_ENV: &str = "BOOBLIK_BROKER";
/// Exit code of a usage error.
const EXIT_USAGE: u8 = 2;
/// Exit code of a failure of the client.
const EXIT_FAILURE: u8 = 1;

const USAGE: &str = "usage: BOOBLIK_BROKER=host:port booblik-conformance <verb> [args…]
verbs:
  capabilities
  metadata <topic>
  produce <topic> <partition> <none|written|forced> <hex>[,<hex>…]
  produce-keyed <topic> <keyHex> <payloadHex>
  fetch <topic> <partition> <offset> <maxBytes>";

/// How a verb can fail.
enum Failure {
    /// The invocation is wrong.
    Usage(String),
    /// The client could not carry the verb out.
    Client(anyhow::Error),
}

impl From<ClientError> for Failure {
    fn from(error: ClientError) -> Self {
        Failure::Client(error.into())
    }
}

/// `key=value` lines, printed only when the verb succeeded.
type Answer = Vec<(&'static str, String)>;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args).await {
        Ok(answer) => {
            for (key, value) in answer {
                println!("{key}={value}");
            }
            ExitCode::SUCCESS
        }
        Err(Failure::Usage(message)) => {
            eprintln!("booblik-conformance: {message}\n{USAGE}");
            ExitCode::from(EXIT_USAGE)
        }
        Err(Failure::Client(error)) => {
            eprintln!("booblik-conformance: {error:#}");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}

async fn run(args: &[String]) -> Result<Answer, Failure> {
    let Some((verb, rest)) = args.split_first() else {
        return Err(Failure::Usage("no verb given".into()));
    };
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    if verb == "capabilities" {
        expect_args(verb, &rest, 0)?;
        return Ok(vec![
            ("roles", "producer,consumer".into()),
            ("name", CLIENT_NAME.into()),
        ]);
    }
    let (arity, handler): (usize, Verb) = match verb.as_str() {
        "metadata" => (1, Verb::Metadata),
        "produce" => (4, Verb::Produce),
        "produce-keyed" => (3, Verb::ProduceKeyed),
        "fetch" => (4, Verb::Fetch),
        other => return Err(Failure::Usage(format!("unknown verb {other:?}"))),
    };
    expect_args(verb, &rest, arity)?;
    let connection = connect().await?;
    let result = match handler {
        Verb::Metadata => metadata(&connection, rest[0]).await,
        Verb::Produce => produce(&connection, &rest).await,
        Verb::ProduceKeyed => produce_keyed(&connection, &rest).await,
        Verb::Fetch => fetch(&connection, &rest).await,
    };
    match result {
        Ok(answer) => Ok(answer),
        Err(Failure::Client(error)) => {
            match error.downcast_ref::<ClientError>().and_then(refusal) {
                Some(code) => Ok(vec![("error", code.name().to_owned())]),
                None => Err(Failure::Client(error)),
            }
        }
        Err(usage) => Err(usage),
    }
}

#[derive(Clone, Copy)]
enum Verb {
    Metadata,
    Produce,
    ProduceKeyed,
    Fetch,
}

/// The protocol code a refusal is reported with, when the error is a refusal at all.
fn refusal(error: &ClientError) -> Option<ErrorCode> {
    match error {
        ClientError::Broker { code, .. } => Some(*code),
        // Refused by the client on the broker's behalf: the broker would have said this.
        ClientError::EmptyRecord | ClientError::InvalidTopicName(_) => {
            Some(ErrorCode::CorruptRequest)
        }
        ClientError::UnknownPartition { .. } => Some(ErrorCode::UnknownTopicOrPartition),
        ClientError::RecordTooLarge { .. } => Some(ErrorCode::RecordTooLarge),
        _ => None,
    }
}

fn expect_args(verb: &str, args: &[&str], count: usize) -> Result<(), Failure> {
    if args.len() == count {
        Ok(())
    } else {
        Err(Failure::Usage(format!(
            "{verb} takes {count} arguments, got {}",
            args.len()
        )))
    }
}

fn parse<T: std::str::FromStr>(what: &str, value: &str) -> Result<T, Failure> {
    value
        .parse()
        .map_err(|_| Failure::Usage(format!("{what} {value:?} is not valid")))
}

fn parse_hex(what: &str, value: &str) -> Result<Vec<u8>, Failure> {
    hex::decode(value).map_err(|e| Failure::Usage(format!("{what} {value:?} is not hex: {e}")))
}

fn topic_name(value: &str) -> Result<TopicName, Failure> {
    TopicName::new(value).map_err(|e| ClientError::from(e).into())
}

async fn connect() -> Result<Connection, Failure> {
    let addr = std::env::var(BROKER_ENV)
        .map_err(|_| Failure::Usage(format!("{BROKER_ENV} is not set (host:port)")))?;
    Connection::connect(&addr, ConnectionConfig::default())
        .await
        .with_context(|| format!("connecting to {addr}"))
        .map_err(Failure::Client)
}

async fn metadata(connection: &Connection, topic: &str) -> Result<Answer, Failure> {
    let topic = topic_name(topic)?;
    let response = connection.metadata(std::slice::from_ref(&topic)).await?;
    let entry = response
        .topics
        .into_iter()
        .find(|t| t.name == topic)
        .ok_or_else(|| ClientError::Broker {
            code: ErrorCode::UnknownTopicOrPartition,
            request: format!("METADATA {topic}"),
        })?;
    Ok(entry
        .partitions
        .iter()
        .map(|p| {
            (
                "partition",
                format!("{} {} {}", p.id, p.log_start_offset, p.high_watermark),
            )
        })
        .collect())
}

async fn produce(connection: &Connection, args: &[&str]) -> Result<Answer, Failure> {
    let topic = topic_name(args[0])?;
    let partition: i32 = parse("partition", args[1])?;
    let ack: AckPolicy = args[2].parse().map_err(|e: String| Failure::Usage(e))?;
    let payloads = args[3]
        .split(',')
        .map(|hex| parse_hex("record", hex))
        .collect::<Result<Vec<_>, _>>()?;
    let records = record_set(&payloads)?;
    let answer = connection.produce(&topic, partition, ack, records).await?;
    Ok(answer.map_or_else(Vec::new, |r| {
        vec![
            ("baseOffset", r.base_offset.to_string()),
            ("logEndOffset", r.log_end_offset.to_string()),
        ]
    }))
}

async fn produce_keyed(connection: &Connection, args: &[&str]) -> Result<Answer, Failure> {
    let topic = topic_name(args[0])?;
    let key = parse_hex("key", args[1])?;
    let payload = parse_hex("payload", args[2])?;
    let records = record_set(std::slice::from_ref(&payload))?;
    let metadata = connection.metadata(std::slice::from_ref(&topic)).await?;
    let entry = metadata
        .topics
        .into_iter()
        .find(|t| t.name == topic && !t.partitions.is_empty())
        .ok_or_else(|| ClientError::Broker {
            code: ErrorCode::UnknownTopicOrPartition,
            request: format!("METADATA {topic}"),
        })?;
    let partition = Topic::from_metadata(entry).partition_for(&key);
    let answer = connection
        .produce(&topic, partition, AckPolicy::Written, records)
        .await?
        .ok_or_else(|| Failure::Client(anyhow!("no answer to an ack=written produce")))?;
    Ok(vec![
        ("partition", partition.to_string()),
        ("baseOffset", answer.base_offset.to_string()),
    ])
}

fn record_set(payloads: &[Vec<u8>]) -> Result<RecordSet, Failure> {
    if payloads.iter().any(Vec::is_empty) {
        return Err(ClientError::EmptyRecord.into());
    }
    if let Some(size) = payloads
        .iter()
        .map(Vec::len)
        .find(|&size| size > MAX_RECORD_PAYLOAD_BYTES)
    {
        return Err(ClientError::RecordTooLarge {
            size,
            max: MAX_RECORD_PAYLOAD_BYTES,
        }
        .into());
    }
    RecordSet::from_payloads(payloads)
        .map_err(|e| Failure::Client(anyhow!(e).context("building the record set")))
}

async fn fetch(connection: &Connection, args: &[&str]) -> Result<Answer, Failure> {
    let topic = topic_name(args[0])?;
    let partition: i32 = parse("partition", args[1])?;
    let fetch_offset: i64 = parse("offset", args[2])?;
    let max_bytes = parse::<i32>("maxBytes", args[3])?.min(MAX_FETCH_BYTES);
    let request = FetchRequest {
        topic: topic.clone(),
        partition,
        fetch_offset,
        max_bytes,
        long_poll: None,
    };
    let response = connection.fetch(request).await?;
    let mut answer = vec![("highWatermark", response.high_watermark.to_string())];
    match Batch::from_fetch(&topic, partition, fetch_offset, max_bytes, response) {
        Ok(batch) => {
            answer.extend(
                batch
                    .records
                    .iter()
                    .map(|r| ("record", hex::encode(&r.payload))),
            );
        }
        Err(ClientError::RecordExceedsMaxBytes { size, .. }) => {
            answer.push(("recordExceedsMaxBytes", size.to_string()));
        }
        Err(other) => return Err(other.into()),
    }
    Ok(answer)
}
