//! Answers: the raw frame a caller receives, its typed decoding, and [`ResponseFuture`], the
//! second half of a two-phase call.
//!
//! Submitting and awaiting are separate on purpose. Submission puts the request into the
//! writer's queue, which fixes its place on the wire; awaiting can happen later, elsewhere. A
//! producer relies on this: it submits the batches of one partition one after another (so they
//! reach the broker in order) and awaits their answers concurrently.

use std::fmt;
use std::future::IntoFuture;
use std::sync::Arc;

use booblik_protocol::{
    ApiKey, ErrorCode, FetchResponse, MetadataResponse, ProduceResponse, ResponseFrame, TopicName,
    WireMessage,
};
use bytes::Bytes;
use futures::future::BoxFuture;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::connection::shared::Shared;
use crate::error::ClientError;

/// A response frame as read: its header and its undecoded body (a slice of the frame).
pub(crate) type RawResponse = ResponseFrame<Bytes>;

/// Turns what the reader delivered into the caller's type; `request` names the request for
/// error messages.
pub(crate) type Decoder<T> = fn(Option<RawResponse>, &RequestLabel) -> Result<T, ClientError>;

/// What a request was, for error messages. Kept as fields and formatted only when a message is
/// needed: formatting it for every request cost an allocation per request.
#[derive(Debug, Clone)]
pub(crate) enum RequestLabel {
    /// `PRODUCE topic/partition`.
    Produce { topic: TopicName, partition: i32 },
    /// `FETCH topic/partition at offset N`.
    Fetch {
        topic: TopicName,
        partition: i32,
        offset: i64,
    },
    /// `METADATA a,b` or `METADATA (all topics)`.
    Metadata(Vec<TopicName>),
}

impl fmt::Display for RequestLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestLabel::Produce { topic, partition } => write!(f, "PRODUCE {topic}/{partition}"),
            RequestLabel::Fetch {
                topic,
                partition,
                offset,
            } => write!(f, "FETCH {topic}/{partition} at offset {offset}"),
            RequestLabel::Metadata(topics) if topics.is_empty() => {
                f.write_str("METADATA (all topics)")
            }
            RequestLabel::Metadata(topics) => {
                f.write_str("METADATA ")?;
                for (i, topic) in topics.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    f.write_str(topic.as_str())?;
                }
                Ok(())
            }
        }
    }
}

/// The answer to a submitted request, still on its way.
///
/// Await it (it implements `IntoFuture`) or call [`ResponseFuture::wait`]. The request timeout
/// runs from the submission; when it passes, the connection is closed (see
/// [`ConnectionConfig::request_timeout_ms`](crate::ConnectionConfig::request_timeout_ms)).
/// Dropping it abandons the answer but not the request, which stays on the wire.
pub struct ResponseFuture<T> {
    pub(crate) reply: oneshot::Receiver<Result<Option<RawResponse>, ClientError>>,
    pub(crate) deadline: Instant,
    pub(crate) timeout_ms: u64,
    pub(crate) correlation_id: i32,
    pub(crate) api: ApiKey,
    pub(crate) shared: Arc<Shared>,
    pub(crate) request: RequestLabel,
    pub(crate) decode: Decoder<T>,
}

impl<T> fmt::Debug for ResponseFuture<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("request", &format_args!("{}", self.request))
            .field("correlation_id", &self.correlation_id)
            .field("timeout_ms", &self.timeout_ms)
            .finish_non_exhaustive()
    }
}

impl<T> ResponseFuture<T> {
    /// The request's correlationId.
    pub fn correlation_id(&self) -> i32 {
        self.correlation_id
    }

    /// Waits for the answer (or, for `ack = NONE`, for the write).
    pub async fn wait(self) -> Result<T, ClientError> {
        let Self {
            reply,
            deadline,
            timeout_ms,
            correlation_id,
            api,
            shared,
            request,
            decode,
        } = self;
        match tokio::time::timeout_at(deadline, reply).await {
            Ok(Ok(Ok(raw))) => decode(raw, &request),
            Ok(Ok(Err(error))) => Err(error),
            // The writer dropped the request without an outcome: it stopped on a failure.
            Ok(Err(_)) => Err(shared.closed_error()),
            Err(_) => {
                let error = ClientError::Timeout {
                    api: api.name(),
                    correlation_id,
                    timeout_ms,
                };
                shared.fail(ClientError::closed(format!(
                    "{request} (correlationId {correlation_id}) got no answer within \
                     {timeout_ms} ms; later answers would queue behind it"
                )));
                Err(error)
            }
        }
    }
}

impl<T: Send + 'static> IntoFuture for ResponseFuture<T> {
    type Output = Result<T, ClientError>;
    type IntoFuture = BoxFuture<'static, Result<T, ClientError>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.wait())
    }
}

/// The body of a successful answer, or the broker's refusal.
fn success_body(raw: RawResponse, request: &RequestLabel) -> Result<Bytes, ClientError> {
    match raw.header.error_code {
        ErrorCode::None => Ok(raw.body),
        code => Err(ClientError::Broker {
            code,
            request: request.to_string(),
        }),
    }
}

/// PRODUCE: `None` when no answer was expected (`ack = NONE`).
pub(crate) fn decode_produce(
    raw: Option<RawResponse>,
    request: &RequestLabel,
) -> Result<Option<ProduceResponse>, ClientError> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    let body = success_body(raw, request)?;
    let (response, _) = ProduceResponse::decode(&body)?;
    Ok(Some(response))
}

/// METADATA.
pub(crate) fn decode_metadata(
    raw: Option<RawResponse>,
    request: &RequestLabel,
) -> Result<MetadataResponse, ClientError> {
    let raw = raw.expect("METADATA always expects an answer");
    let body = success_body(raw, request)?;
    let (response, _) = MetadataResponse::decode(&body)?;
    Ok(response)
}

/// FETCH: the payload is a slice of the frame (`FetchResponse::decode_bytes`), not a copy.
pub(crate) fn decode_fetch(
    raw: Option<RawResponse>,
    request: &RequestLabel,
) -> Result<FetchResponse, ClientError> {
    let raw = raw.expect("FETCH always expects an answer");
    let body = success_body(raw, request)?;
    let (response, _) = FetchResponse::decode_bytes(&body)?;
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use booblik_protocol::{ResponseHeader, WireError};
    use bytes::{BufMut, BytesMut};

    fn fetch_label() -> RequestLabel {
        RequestLabel::Fetch {
            topic: TopicName::new("t").unwrap(),
            partition: 0,
            offset: 0,
        }
    }

    fn produce_label() -> RequestLabel {
        RequestLabel::Produce {
            topic: TopicName::new("t").unwrap(),
            partition: 0,
        }
    }

    #[test]
    fn labels_read_as_before() {
        assert_eq!(produce_label().to_string(), "PRODUCE t/0");
        assert_eq!(fetch_label().to_string(), "FETCH t/0 at offset 0");
        assert_eq!(
            RequestLabel::Metadata(Vec::new()).to_string(),
            "METADATA (all topics)"
        );
        let two = vec![TopicName::new("a").unwrap(), TopicName::new("b").unwrap()];
        assert_eq!(RequestLabel::Metadata(two).to_string(), "METADATA a,b");
    }

    fn raw(code: ErrorCode, body: &[u8]) -> RawResponse {
        RawResponse {
            header: ResponseHeader {
                correlation_id: 1,
                error_code: code,
            },
            body: Bytes::copy_from_slice(body),
        }
    }

    #[test]
    fn a_fetch_payload_is_a_slice_of_the_frame() {
        let mut body = BytesMut::new();
        body.put_i64(42);
        body.put_i32(3);
        body.put_slice(b"abc");
        let body = body.freeze();
        let start = body.as_ptr() as usize;
        let response = decode_fetch(
            Some(RawResponse {
                header: ResponseHeader {
                    correlation_id: 1,
                    error_code: ErrorCode::None,
                },
                body,
            }),
            &fetch_label(),
        )
        .unwrap();
        assert_eq!(response.high_watermark, 42);
        assert_eq!(&response.payload[..], b"abc");
        assert_eq!(
            response.payload.as_ptr() as usize,
            start + 12,
            "copied, not sliced"
        );
    }

    #[test]
    fn a_fetch_body_shorter_than_its_payload_length_is_a_protocol_error() {
        let mut body = Vec::new();
        body.put_i64(1);
        body.put_i32(10);
        body.put_slice(b"abc");
        assert!(matches!(
            decode_fetch(Some(raw(ErrorCode::None, &body)), &fetch_label()),
            Err(ClientError::Protocol(WireError::UnexpectedEnd { .. }))
        ));
    }

    #[test]
    fn an_error_code_becomes_a_broker_refusal_naming_the_request() {
        let err = decode_produce(Some(raw(ErrorCode::RecordTooLarge, &[])), &produce_label())
            .unwrap_err();
        assert_eq!(err.broker_code(), Some(ErrorCode::RecordTooLarge));
        assert!(err.to_string().contains("PRODUCE t/0"), "{err}");
    }

    #[test]
    fn no_answer_to_a_produce_is_none() {
        assert_eq!(decode_produce(None, &produce_label()).unwrap(), None);
    }
}
