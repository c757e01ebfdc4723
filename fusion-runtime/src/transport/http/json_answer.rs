//! rmcp answers every request on a session as an SSE stream, even one whose only event is
//! its answer. This turns such a stream into one `application/json` body, as the calls
//! served by the transport itself are answered (`answer.rs`), so that a client gets JSON
//! wherever nothing streams (issue 32): the answer's event is read, and when it is the
//! first event with data (after the priming event of a resumable stream) and a JSON-RPC
//! response, it becomes the body. A stream that first carries anything else (a
//! notification, a request to the client, a keep-alive comment of a long call) is passed
//! on as it came, the bytes already read first.

use axum::{
    body::{Body, Bytes},
    http::{HeaderValue, StatusCode, header},
    response::Response,
};
use futures_util::StreamExt as _;
use serde::{Deserialize, de::IgnoredAny};

/// `response` as one JSON body when it is an SSE stream whose first event is a JSON-RPC
/// response; as it came otherwise.
pub(super) async fn as_json(response: Response) -> Response {
    let is_stream = response.status() == StatusCode::OK
        && response
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|value| value.as_bytes().starts_with(b"text/event-stream"));
    if !is_stream {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let mut stream = body.into_data_stream();
    let mut read = Vec::new();
    // Where the event being looked at starts: past the priming events (an event id and
    // the retry interval of a resumable stream, without data), which a whole answer does
    // not need.
    let mut start = 0;
    // Await: the stream's first event with data (a client that hangs up drops this
    // future, and the stream with it, as it would drop the stream).
    loop {
        if let Some(length) = memchr::memmem::find(&read[start..], b"\n\n") {
            let (event, rest) = (&read[start..start + length], &read[start + length + 2..]);
            if is_priming(event) {
                start += length + 2;
                continue;
            }
            // The answer, and nothing after it but the stream's end.
            if let Some(data) = answer_data(event)
                && rest.iter().all(u8::is_ascii_whitespace)
            {
                parts.headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                parts.headers.remove(header::CACHE_CONTROL);
                return Response::from_parts(parts, Body::from(data));
            }
            break;
        }
        match stream.next().await {
            Some(Ok(chunk)) => read.extend_from_slice(&chunk),
            // The stream ended (or failed) before an event with data: passed on as it is.
            Some(Err(_)) | None => break,
        }
    }
    let rest = futures_util::stream::once(async move { Ok(Bytes::from(read)) }).chain(stream);
    Response::from_parts(parts, Body::from_stream(rest))
}

/// A priming event: an event id, a retry interval, and empty data, nothing else.
fn is_priming(event: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(event) else {
        return false;
    };
    text.lines().all(|line| {
        line.starts_with("id:")
            || line.starts_with("retry:")
            || line
                .strip_prefix("data:")
                .is_some_and(|data| data.trim().is_empty())
    })
}

/// The data of an SSE event when it is a JSON-RPC response or error (one `data:` line, as
/// rmcp writes it; anything else is not turned into JSON).
fn answer_data(event: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(event).ok()?;
    let mut data = None;
    for line in text.lines() {
        if let Some(value) = line.strip_prefix("data:") {
            if data.is_some() {
                return None;
            }
            data = Some(value.strip_prefix(' ').unwrap_or(value));
        } else if !(line.starts_with("id:") || line.starts_with("event:")) {
            // A comment, `retry:`, or a field this does not know: left to the client.
            return None;
        }
    }
    let data = data?;
    let message = serde_json::from_str::<Shape>(data).ok()?;
    (message.method.is_none() && (message.result.is_some() || message.error.is_some()))
        .then(|| data.as_bytes().to_vec())
}

/// What tells a JSON-RPC response from a request or a notification.
#[derive(Deserialize)]
struct Shape {
    method: Option<IgnoredAny>,
    result: Option<IgnoredAny>,
    error: Option<IgnoredAny>,
}

#[cfg(test)]
mod tests {
    use axum::response::IntoResponse as _;

    use super::*;

    fn sse(chunks: &'static [&'static str]) -> Response {
        let stream =
            futures_util::stream::iter(chunks.iter().map(|chunk| {
                Ok::<_, std::convert::Infallible>(Bytes::from_static(chunk.as_bytes()))
            }));
        (
            [(header::CONTENT_TYPE, "text/event-stream")],
            Body::from_stream(stream),
        )
            .into_response()
    }

    async fn text(response: Response) -> (String, String) {
        let kind = response.headers()[header::CONTENT_TYPE]
            .to_str()
            .expect("text")
            .to_owned();
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .expect("a body");
        (kind, String::from_utf8(body.to_vec()).expect("utf-8"))
    }

    #[tokio::test]
    async fn a_stream_of_one_answer_becomes_json() {
        let response = sse(&["data: {\"jsonrpc\":\"2.0\",\"id\":1,", "\"result\":{}}\n\n"]);
        assert_eq!(
            text(as_json(response).await).await,
            (
                "application/json".to_owned(),
                r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_owned()
            )
        );
        let with_id = sse(&[
            "id: 0\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32601,\"message\":\"no\"}}\n\n",
        ]);
        assert_eq!(text(as_json(with_id).await).await.0, "application/json");
    }

    #[tokio::test]
    async fn streams_that_carry_more_pass_unchanged() {
        for chunks in [
            &[
                "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n",
                "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
            ][..],
            &[
                ": keep-alive\n\n",
                "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
            ][..],
            &["id: 0\nretry: 3000\ndata:\n\n", ": keep-alive\n\n"][..],
            &[
                "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n",
            ][..],
            &[][..],
        ] {
            let leaked: &'static [&'static str] = Box::leak(chunks.to_vec().into_boxed_slice());
            let (kind, body) = text(as_json(sse(leaked)).await).await;
            assert_eq!(kind, "text/event-stream", "{chunks:?}");
            assert_eq!(body, chunks.concat(), "{chunks:?}");
        }
    }
}
