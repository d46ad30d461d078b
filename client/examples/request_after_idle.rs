//! Diagnostic: what one METADATA round trip costs right after the caller was idle, by client
//! stack and tokio runtime flavor.
//!
//! The task-queue claim is issued after a pause (the worker's work), and on a VM every parked
//! thread woken on the request's path wakes a halted vCPU. This example separates the broker's
//! share from the client's: the same request, against the same running broker, sent
//!
//! * `blocking` — from a plain blocking `std::net::TcpStream` (one thread, no runtime);
//! * `tokio-current`, `tokio-multi:N` — from a `tokio::net::TcpStream` written and read by the
//!   measuring task itself (no client, no other task): what the runtime alone adds;
//! * `current` — through `booblik_client::Connection` on a current-thread runtime;
//! * `multi:N` — through `booblik_client::Connection` on a multi-thread runtime of N workers.
//!
//! ```sh
//! cargo run --release -p booblik-broker -- --bind 127.0.0.1:19092 --data-dir /tmp/probe --topics probe:1 &
//! cargo run --release -p booblik-client --example request_after_idle -- 127.0.0.1:19092 blocking tokio-current tokio-multi:2 current multi:2
//! ```
//!
//! For each stack: 600 requests back to back, then 600 each after a 2 ms sleep; the first 100 of
//! each are warm-up. Prints the p50 of both.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use booblik_client::{Client, ConnectionConfig, TopicName};
use booblik_protocol::{MetadataRequest, Request, RequestBody};

const REQUESTS: usize = 600;
const WARM_UP: usize = 100;
const PAUSE: Duration = Duration::from_millis(2);
const TOPIC: &str = "probe";

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args
        .next()
        .context("usage: request_after_idle ADDR (blocking|current|multi:N)...")?;
    for stack in args {
        for pause in [false, true] {
            let latencies_us = match stack.as_str() {
                "blocking" => blocking(&addr, pause)?,
                "tokio-current" => tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?
                    .block_on(spawned_socket(&addr, pause))?,
                other if other.starts_with("tokio-multi:") => {
                    tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(other["tokio-multi:".len()..].parse()?)
                        .enable_all()
                        .build()?
                        .block_on(spawned_socket(&addr, pause))?
                }
                "current" => tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?
                    .block_on(spawned(&addr, pause))?,
                other => {
                    let Some(workers) = other.strip_prefix("multi:") else {
                        bail!(
                            "unknown stack {other:?}: blocking, tokio-current, tokio-multi:N, current or multi:N"
                        );
                    };
                    tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(workers.parse()?)
                        .enable_all()
                        .build()?
                        .block_on(spawned(&addr, pause))?
                }
            };
            let when = if pause {
                "after 2 ms idle"
            } else {
                "back to back"
            };
            println!("{stack:>10} {when:>16}: p50 {} µs", median(latencies_us));
        }
    }
    Ok(())
}

fn median(mut latencies_us: Vec<u128>) -> u128 {
    latencies_us.sort_unstable();
    latencies_us[latencies_us.len() / 2]
}

/// The request from a plain blocking socket: the broker's share plus the kernel's.
fn blocking(addr: &str, pause: bool) -> anyhow::Result<Vec<u128>> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_nodelay(true)?;
    let mut answer = vec![0u8; 64 * 1024];
    let mut latencies_us = Vec::with_capacity(REQUESTS);
    for i in 0..REQUESTS {
        if pause {
            std::thread::sleep(PAUSE);
        }
        let frame = metadata_frame(i)?;
        let started = Instant::now();
        stream.write_all(&frame)?;
        let mut len = [0u8; 4];
        stream.read_exact(&mut len)?;
        let len = usize::try_from(i32::from_be_bytes(len))?;
        stream.read_exact(&mut answer[..len])?;
        if i >= WARM_UP {
            latencies_us.push(started.elapsed().as_micros());
        }
    }
    Ok(latencies_us)
}

/// Runs [`async_socket`] as a spawned task.
async fn spawned_socket(addr: &str, pause: bool) -> anyhow::Result<Vec<u128>> {
    let addr = addr.to_owned();
    tokio::spawn(async move { async_socket(&addr, pause).await }).await?
}

/// The request from a tokio socket the measuring task writes and reads itself.
async fn async_socket(addr: &str, pause: bool) -> anyhow::Result<Vec<u128>> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let mut answer = vec![0u8; 64 * 1024];
    let mut latencies_us = Vec::with_capacity(REQUESTS);
    for i in 0..REQUESTS {
        if pause {
            tokio::time::sleep(PAUSE).await;
        }
        let frame = metadata_frame(i)?;
        let started = Instant::now();
        stream.write_all(&frame).await?;
        let len = usize::try_from(stream.read_i32().await?)?;
        stream.read_exact(&mut answer[..len]).await?;
        if i >= WARM_UP {
            latencies_us.push(started.elapsed().as_micros());
        }
    }
    Ok(latencies_us)
}

/// A METADATA request for [`TOPIC`], length prefix included.
fn metadata_frame(correlation: usize) -> anyhow::Result<Vec<u8>> {
    let mut frame = Vec::new();
    Request {
        correlation_id: i32::try_from(correlation)?,
        body: RequestBody::Metadata(MetadataRequest {
            topics: vec![TopicName::new(TOPIC)?],
        }),
    }
    .encode(&mut frame);
    Ok(frame)
}

/// Runs [`through_client`] as a spawned task, as a worker's code runs: the future given to
/// `block_on` has a waker of its own that signals the runtime's eventfd on every wake-up, which
/// no spawned task pays.
async fn spawned(addr: &str, pause: bool) -> anyhow::Result<Vec<u128>> {
    let addr = addr.to_owned();
    tokio::spawn(async move { through_client(&addr, pause).await }).await?
}

/// The same request through the client's pipelined connection (writer and reader tasks).
async fn through_client(addr: &str, pause: bool) -> anyhow::Result<Vec<u128>> {
    let client = Client::connect(addr, ConnectionConfig::default()).await?;
    let connection = client.open_connection().await?;
    let topic = TopicName::new(TOPIC)?;
    let mut latencies_us = Vec::with_capacity(REQUESTS);
    for i in 0..REQUESTS {
        if pause {
            tokio::time::sleep(PAUSE).await;
        }
        let started = Instant::now();
        connection.metadata(std::slice::from_ref(&topic)).await?;
        if i >= WARM_UP {
            latencies_us.push(started.elapsed().as_micros());
        }
    }
    Ok(latencies_us)
}
