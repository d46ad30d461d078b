//! The ack policy as a command-line value (`none`, `written`, `forced`).

use booblik_client::AckPolicy;
use serde::Serialize;

/// When the broker answers a PRODUCE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ack {
    /// No answer at all.
    None,
    /// After the bytes are in the log (page cache).
    Written,
    /// After an fsync covering the batch (group commit).
    Forced,
}

impl Ack {
    /// The protocol's policy.
    pub fn policy(self) -> AckPolicy {
        match self {
            Ack::None => AckPolicy::None,
            Ack::Written => AckPolicy::Written,
            Ack::Forced => AckPolicy::Forced,
        }
    }

    /// Lower-case name, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Ack::None => "none",
            Ack::Written => "written",
            Ack::Forced => "forced",
        }
    }
}
