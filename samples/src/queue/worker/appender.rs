//! Appends to the claims partition, one record per PRODUCE, and returns the record's offset.
//!
//! One record per request, not a batching producer: a claim is worth nothing until the worker
//! knows its offset, and a linger window would only add latency to the claim round trip.
//! The ack policy is the worker's `claim_ack` (FORCED by default, see the worker module docs).
//!
//! A failed append is **not** retried here: after a lost connection nobody knows whether the
//! record was written. The caller decides — a claim is simply abandoned (if it was written and
//! won, the lease lapses and the task is claimed again), a done is repeated (a repeat of an
//! accepted done is harmless by the verdict rules).

use booblik_client::{AckPolicy, Client, ClientError, Connection};
use booblik_protocol::{RecordSet, TopicName};
use tokio::sync::Mutex;

use crate::queue::record::ClaimsRecord;

/// The claims appender: a connection of its own, reopened when it breaks.
#[derive(Debug)]
pub(crate) struct Appender {
    client: Client,
    topic: TopicName,
    ack: AckPolicy,
    connection: Mutex<Option<Connection>>,
}

impl Appender {
    pub(crate) fn new(client: Client, topic: TopicName, ack: AckPolicy) -> Self {
        Self {
            client,
            topic,
            ack,
            connection: Mutex::new(None),
        }
    }

    /// Appends `record` to partition 0 and returns its offset once acknowledged.
    pub(crate) async fn append(&self, record: &ClaimsRecord) -> Result<i64, ClientError> {
        let records = RecordSet::from_payloads([record.encode()])?;
        let connection = self.connection().await?;
        let response = connection
            .produce(&self.topic, 0, self.ack, records)
            .await?
            // Only ack NONE answers nothing, and a validated config never uses it.
            .ok_or_else(|| {
                ClientError::InvalidConfig("claim_ack NONE returns no offset".to_owned())
            })?;
        Ok(response.base_offset)
    }

    async fn connection(&self) -> Result<Connection, ClientError> {
        let mut connection = self.connection.lock().await;
        match &*connection {
            Some(open) if !open.is_closed() => Ok(open.clone()),
            _ => {
                let open = self.client.open_connection().await?;
                *connection = Some(open.clone());
                Ok(open)
            }
        }
    }
}
