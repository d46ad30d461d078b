//! `booblik-load`: the load harness and the task-queue latency experiment.

mod baseline;

use clap::{Parser, Subcommand};

/// The booblik load harness.
#[derive(Debug, Parser)]
#[command(version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// This machine's floor: loopback round trip, loopback TCP throughput, fsync latency.
    Baseline,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Baseline => {
            let b = baseline::measure(baseline::BaselineConfig::default()).await?;
            println!("machine: {}", baseline::machine_description());
            println!("{}", serde_json::to_string_pretty(&b)?);
        }
    }
    Ok(())
}
