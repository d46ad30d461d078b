//! Writing into JetStream: every record carries its source position in headers.
//!
//! ```text
//!   Nats-Msg-Id:            events/2/1234    JetStream drops a second copy inside its window
//!   Booblik-Relay-Source:   events/2         which source partition the record came from
//!   Booblik-Relay-Offset:   1234             its offset there
//! ```
//!
//! A restarting relay reads the stream's last record and resumes after the offset it names,
//! whatever the offset store says: the store may be one batch behind (a crash between the
//! PubAck and the save), the stream never is. `Nats-Msg-Id` is the second guard, inside the
//! stream's duplicate window (two minutes by default): a PubAck that says `duplicate` is counted.

use async_nats::HeaderMap;
use async_nats::jetstream::{self, stream};
use async_trait::async_trait;

use super::target::{Recovery, TargetPartition};
use crate::engine::LogRecord;

/// The header naming the source partition (`topic/partition`).
pub const SOURCE_HEADER: &str = "Booblik-Relay-Source";
/// The header holding the record's source offset.
pub const OFFSET_HEADER: &str = "Booblik-Relay-Offset";

/// A JetStream stream written by the relay.
#[derive(Debug)]
pub struct JetStreamTarget {
    context: jetstream::Context,
    stream: stream::Stream,
    subject: String,
    /// `topic/partition` of the source.
    source: String,
}

impl JetStreamTarget {
    /// Writes into `stream` on `subject`, records coming from `source` (`topic/partition`).
    pub fn new(
        context: jetstream::Context,
        stream: stream::Stream,
        subject: String,
        source: String,
    ) -> Self {
        Self {
            context,
            stream,
            subject,
            source,
        }
    }
}

#[async_trait]
impl TargetPartition for JetStreamTarget {
    async fn recover(&self, saved: i64) -> anyhow::Result<Recovery> {
        use jetstream::stream::LastRawMessageErrorKind as Kind;
        let last = match self
            .stream
            .get_last_raw_message_by_subject(&self.subject)
            .await
        {
            Ok(message) => message,
            Err(error) if error.kind() == Kind::NoMessageFound => {
                return Ok(Recovery {
                    resume_at: saved,
                    duplicates: 0,
                    duplicates_total: 0,
                });
            }
            Err(error) => anyhow::bail!("cannot read the tail of {}: {error}", self.subject),
        };
        let header = |name: &str| last.headers.get(name).map(|v| v.as_str().to_owned());
        // A stream whose last record is not ours (written by hand, or by a relay from another
        // source) cannot tell us where to resume: refuse rather than guess.
        if header(SOURCE_HEADER).as_deref() != Some(self.source.as_str()) {
            anyhow::bail!(
                "the last record of {} (sequence {}) was not relayed from {} (its {SOURCE_HEADER} is {:?}); refusing to mix sources",
                self.subject,
                last.sequence,
                self.source,
                header(SOURCE_HEADER)
            );
        }
        let relayed: i64 = header(OFFSET_HEADER)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| {
                anyhow::anyhow!("the last record of {} has no {OFFSET_HEADER}", self.subject)
            })?;
        let resume_at = saved.max(relayed + 1);
        if resume_at > saved {
            tracing::info!(
                partition = %self.source,
                saved,
                resume_at,
                "the target holds records past the saved position: resuming after its tail"
            );
        }
        Ok(Recovery {
            resume_at,
            duplicates: 0,
            duplicates_total: 0,
        })
    }

    async fn write(&self, records: &[LogRecord]) -> anyhow::Result<u64> {
        // All publishes first, then all PubAcks: one round trip per batch, not per record.
        let mut pending = Vec::with_capacity(records.len());
        for record in records {
            let mut headers = HeaderMap::new();
            let offset = record.offset.to_string();
            headers.insert(
                async_nats::header::NATS_MESSAGE_ID,
                format!("{}/{offset}", self.source).as_str(),
            );
            headers.insert(SOURCE_HEADER, self.source.as_str());
            headers.insert(OFFSET_HEADER, offset.as_str());
            let ack = self
                .context
                .publish_with_headers(self.subject.clone(), headers, record.payload.clone())
                .await?;
            pending.push(ack);
        }
        let mut duplicates = 0;
        for ack in pending {
            if ack.await?.duplicate {
                duplicates += 1;
            }
        }
        Ok(duplicates)
    }
}
