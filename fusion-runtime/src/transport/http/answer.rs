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
}
