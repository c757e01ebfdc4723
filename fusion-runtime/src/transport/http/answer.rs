//! How the answer of a call served by the transport itself (`direct.rs`) goes out: one
//! `application/json` body when it comes within the SSE keep-alive interval
//! (`HttpOptions::sse_keep_alive`, 15 s by default), which is every ordinary call; for a
//! longer call, an SSE stream opened at the interval, a keep-alive comment every interval
//! after it, and the answer as its one event. A proxy or client that cuts a connection
//! idle for a minute keeps a long call's, as it keeps rmcp's streams; the protocol lets
//! the server choose either form per request.
//!
//! The call runs inside the answer: a client that hangs up drops the response (or its
//! stream), and the call with it.

use std::{pin::Pin, time::Duration};

use axum::{
    body::{Body, Bytes},
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse as _, Response},
};
use rmcp::model::ServerJsonRpcMessage;
use tokio::sync::mpsc;

/// What a call ends with: its message and the status of a JSON answer, or nothing (it was
/// cancelled: JSON-RPC sends no answer).
pub(super) type Ended = Option<(StatusCode, ServerJsonRpcMessage)>;

/// The rest of a call, up to its answer.
pub(super) type Pending = Pin<Box<dyn Future<Output = Ended> + Send>>;

/// The response to a call whose rest is `pending`: JSON if it ends within `keep_alive`
/// (or, without one, whenever it ends), else SSE with keep-alive comments.
pub(super) async fn in_time(mut pending: Pending, keep_alive: Option<Duration>) -> Response {
    let Some(interval) = keep_alive else {
        return at_once(pending.await);
    };
    tokio::select! {
        biased;
        ended = &mut pending => at_once(ended),
        () = tokio::time::sleep(interval) => streamed(pending, interval),
    }
}

/// The response to a call that keeps its own stream to the client (`call_stream.rs`):
/// what it sends arrives on `sent`. As [`in_time`] while it sends nothing; from its first
/// message on, an SSE stream of its messages in order (with keep-alive comments at the
/// interval while it waits), its answer last.
pub(super) async fn in_time_or_sent(
    mut pending: Pending,
    mut sent: mpsc::Receiver<ServerJsonRpcMessage>,
    keep_alive: Option<Duration>,
) -> Response {
    let first = tokio::select! {
        biased;
        message = sent.recv() => message,
        ended = &mut pending => {
            // Sent just before it ended: those messages go first, on a stream.
            return match sent.try_recv() {
                Ok(message) => sse(Body::from_stream(Events::new(Some(message), pending_done(ended), sent, keep_alive).into_stream())),
                Err(_) => at_once(ended),
            };
        }
        () = sleep_or_never(keep_alive) => None,
    };
    sse(Body::from_stream(
        Events::new(first, pending, sent, keep_alive).into_stream(),
    ))
}

/// A call that ended with `ended`, as the rest of a call.
fn pending_done(ended: Ended) -> Pending {
    Box::pin(std::future::ready(ended))
}

/// Sleeps for `interval`, or forever without one.
async fn sleep_or_never(interval: Option<Duration>) {
    match interval {
        Some(interval) => tokio::time::sleep(interval).await,
        None => std::future::pending().await,
    }
}

/// The events of a call's SSE stream: its messages as they come, keep-alive comments
/// while it waits, and its answer last.
struct Events {
    /// An event to send before anything else (the message that opened the stream, or
    /// the keep-alive comment of an interval already waited).
    first: Option<Bytes>,
    pending: Option<Pending>,
    sent: mpsc::Receiver<ServerJsonRpcMessage>,
    /// Whether `sent` may still bring messages (a closed channel is not read again).
    open: bool,
    ticks: Option<tokio::time::Interval>,
}

impl Events {
    fn new(
        first: Option<ServerJsonRpcMessage>,
        pending: Pending,
        sent: mpsc::Receiver<ServerJsonRpcMessage>,
        keep_alive: Option<Duration>,
    ) -> Self {
        let first = match first {
            Some(message) => event(&message),
            None => Some(Bytes::from_static(b": keep-alive\n\n")),
        };
        let ticks = keep_alive.map(|interval| {
            let mut ticks =
                tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks
        });
        Self {
            first,
            pending: Some(pending),
            sent,
            open: true,
            ticks,
        }
    }

    /// The next event; `None` once the answer went.
    async fn next(&mut self) -> Option<Bytes> {
        if let Some(first) = self.first.take() {
            return Some(first);
        }
        let pending = self.pending.as_mut()?;
        loop {
            tokio::select! {
                biased;
                message = self.sent.recv(), if self.open => match message {
                    Some(message) => match event(&message) {
                        Some(event) => return Some(event),
                        None => continue,
                    },
                    None => self.open = false,
                },
                ended = &mut *pending => {
                    self.pending = None;
                    // What it sent before it ended goes before its answer.
                    let mut events = Vec::new();
                    while let Ok(message) = self.sent.try_recv() {
                        events.extend(event(&message));
                    }
                    events.extend(ended.and_then(|(_, message)| event(&message)));
                    return Some(Bytes::from(events.concat()));
                }
                _ = tick(self.ticks.as_mut()) => {
                    return Some(Bytes::from_static(b": keep-alive\n\n"));
                }
            }
        }
    }

    fn into_stream(
        self,
    ) -> impl futures_util::Stream<Item = Result<Bytes, std::convert::Infallible>> + Send {
        futures_util::stream::unfold(self, |mut events| async move {
            let event = events.next().await?;
            Some((Ok(event), events))
        })
    }
}

/// The next tick, or never without keep-alives.
async fn tick(ticks: Option<&mut tokio::time::Interval>) {
    match ticks {
        Some(ticks) => {
            ticks.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// The response to a call that ended.
pub(super) fn at_once(ended: Ended) -> Response {
    match ended {
        Some((status, message)) => answer(status, message),
        None => no_answer(),
    }
}

/// One JSON-RPC message as the whole response.
pub(super) fn answer(status: StatusCode, message: ServerJsonRpcMessage) -> Response {
    match serde_json::to_vec(&message) {
        Ok(body) => (
            status,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            Body::from(body),
        )
            .into_response(),
        Err(error) => {
            tracing::error!(target: "fusion::transport", %error, "an answer could not be serialized");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// The response to a request that gets no answer (it was cancelled): an SSE stream
/// without events, as rmcp ends the stream of a cancelled request.
pub(super) fn no_answer() -> Response {
    sse(Body::empty())
}

/// An SSE stream of keep-alive comments, one now and one every `interval`, until
/// `pending` ends; then its message as the stream's one event (none for a cancelled
/// call), and the end.
fn streamed(pending: Pending, interval: Duration) -> Response {
    let ticks = tokio::time::interval(interval);
    let events = futures_util::stream::unfold(Some((pending, ticks)), |state| async move {
        let (mut pending, mut ticks) = state?;
        tokio::select! {
            biased;
            ended = &mut pending => {
                let event = ended.and_then(|(_, message)| event(&message));
                Some((Ok::<_, std::convert::Infallible>(event.unwrap_or_default()), None))
            }
            _ = ticks.tick() => Some((Ok(Bytes::from_static(b": keep-alive\n\n")), Some((pending, ticks)))),
        }
    });
    sse(Body::from_stream(events))
}

/// `message` as an SSE event.
fn event(message: &ServerJsonRpcMessage) -> Option<Bytes> {
    let json = match serde_json::to_vec(message) {
        Ok(json) => json,
        Err(error) => {
            tracing::error!(target: "fusion::transport", %error, "an answer could not be serialized");
            return None;
        }
    };
    let mut event = Vec::with_capacity(json.len() + 16);
    event.extend_from_slice(b"event: message\ndata: ");
    event.extend_from_slice(&json);
    event.extend_from_slice(b"\n\n");
    Some(Bytes::from(event))
}

fn sse(body: Body) -> Response {
    (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use rmcp::model::{JsonRpcMessage, RequestId, ServerResult};

    use super::*;

    fn pong() -> ServerJsonRpcMessage {
        JsonRpcMessage::response(ServerResult::empty(()), RequestId::Number(1))
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_within_the_interval_is_one_json_body() {
        let pending: Pending = Box::pin(async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Some((StatusCode::OK, pong()))
        });
        let response = in_time(pending, Some(Duration::from_secs(15))).await;
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .expect("a body");
        assert_eq!(body, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
    }

    #[tokio::test(start_paused = true)]
    async fn a_longer_call_streams_keep_alives_then_its_answer() {
        let pending: Pending = Box::pin(async {
            tokio::time::sleep(Duration::from_secs(40)).await;
            Some((StatusCode::OK, pong()))
        });
        let response = in_time(pending, Some(Duration::from_secs(15))).await;
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "text/event-stream"
        );
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .expect("a body");
        assert_eq!(
            body,
            concat!(
                ": keep-alive\n\n",
                ": keep-alive\n\n",
                "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
            )
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_call_ends_its_stream_without_an_event() {
        let pending: Pending = Box::pin(async {
            tokio::time::sleep(Duration::from_secs(20)).await;
            None
        });
        let response = in_time(pending, Some(Duration::from_secs(15))).await;
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .expect("a body");
        assert_eq!(body, ": keep-alive\n\n");
    }

    fn note(n: u32) -> ServerJsonRpcMessage {
        JsonRpcMessage::notification(rmcp::model::ServerNotification::ProgressNotification(
            rmcp::model::Notification::new(rmcp::model::ProgressNotificationParam::new(
                rmcp::model::ProgressToken(rmcp::model::NumberOrString::Number(1)),
                f64::from(n),
            )),
        ))
    }

    async fn body_of(response: Response) -> String {
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .expect("a body");
        String::from_utf8(body.to_vec()).expect("text")
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_with_its_own_stream_that_sends_nothing_is_one_json_body() {
        let (_out, sent) = mpsc::channel(8);
        let pending: Pending = Box::pin(async { Some((StatusCode::OK, pong())) });
        let response = in_time_or_sent(pending, sent, Some(Duration::from_secs(15))).await;
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(
            body_of(response).await,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
        );
    }

    #[tokio::test(start_paused = true)]
    async fn what_a_call_sends_opens_a_stream_its_answer_ends() {
        let (out, sent) = mpsc::channel(8);
        let pending: Pending = Box::pin(async move {
            out.try_send(note(1)).expect("room");
            tokio::time::sleep(Duration::from_secs(1)).await;
            out.try_send(note(2)).expect("room");
            tokio::time::sleep(Duration::from_secs(20)).await;
            Some((StatusCode::OK, pong()))
        });
        let response = in_time_or_sent(pending, sent, Some(Duration::from_secs(15))).await;
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "text/event-stream"
        );
        let body = body_of(response).await;
        let events: Vec<&str> = body
            .split("\n\n")
            .filter(|event| !event.is_empty())
            .collect();
        assert_eq!(events.len(), 4, "{body}");
        assert!(events[0].contains(r#""progress":1.0"#), "{body}");
        assert!(events[1].contains(r#""progress":2.0"#), "{body}");
        assert_eq!(events[2], ": keep-alive", "15 s after the stream opened");
        assert!(events[3].contains(r#""result":{}"#), "{body}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_message_sent_just_before_the_answer_is_not_lost() {
        let (out, sent) = mpsc::channel(8);
        let pending: Pending = Box::pin(async move {
            out.try_send(note(1)).expect("room");
            Some((StatusCode::OK, pong()))
        });
        let response = in_time_or_sent(pending, sent, None).await;
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "text/event-stream"
        );
        let body = body_of(response).await;
        let progress = body.find(r#""progress":1.0"#).expect("the progress");
        let answer = body.find(r#""result":{}"#).expect("the answer");
        assert!(progress < answer, "{body}");
    }
}
