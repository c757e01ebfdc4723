//! A request's body, read whole up to the limit (`HttpOptions::max_body_bytes`): `413`
//! at once when `Content-Length` says it is larger, else when the limit is crossed, and
//! the rest read and dropped so that the client reads its answer.

use std::time::Duration;

use axum::{
    body::{Body, Bytes},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse as _, Response},
};
use futures_util::StreamExt as _;

/// How long the rest of a body over the limit is read and thrown away after the `413`,
/// so that the connection closes cleanly and the client reads its answer. Closing a
/// socket with unread bytes sends a reset, which can destroy the `413` in the client's
/// buffers before it reads it (nginx's "lingering close" does the same).
pub(super) const LINGER: Duration = Duration::from_secs(2);

/// The whole body, or `413` as soon as it is larger than `limit`: at once when
/// `Content-Length` says so (without reading the body), else when the limit is crossed.
pub(super) async fn collect_limited(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Bytes, Response> {
    let too_large = || {
        let mut response = (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("Payload Too Large: the request body exceeds {limit} bytes\n"),
        )
            .into_response();
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        response
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok());
    let mut stream = body.into_data_stream();
    if declared.is_some_and(|length| length > limit as u64) {
        // A client that waits for `100 Continue` never sends the body: it gets the 413
        // instead, and nothing needs reading. Any other client is sending it now.
        let waits = headers
            .get(header::EXPECT)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim().eq_ignore_ascii_case("100-continue"));
        if !waits {
            linger(stream);
        }
        return Err(too_large());
    }
    let unreadable = |error: axum::Error| {
        (
            StatusCode::BAD_REQUEST,
            format!("Bad Request: the body could not be read: {error}\n"),
        )
            .into_response()
    };
    // Most bodies come in one chunk: it is the body, without a copy.
    let first = match stream.next().await {
        Some(chunk) => chunk.map_err(unreadable)?,
        None => return Ok(Bytes::new()),
    };
    if first.len() > limit {
        linger(stream);
        return Err(too_large());
    }
    let Some(second) = stream.next().await else {
        return Ok(first);
    };
    let mut collected = Vec::with_capacity(declared.map_or(0, |length| length as usize));
    collected.extend_from_slice(&first);
    let mut next = Some(second);
    while let Some(chunk) = next {
        let chunk = chunk.map_err(unreadable)?;
        if collected.len() + chunk.len() > limit {
            linger(stream);
            return Err(too_large());
        }
        collected.extend_from_slice(&chunk);
        next = stream.next().await;
    }
    Ok(Bytes::from(collected))
}

/// Reads and drops the rest of a refused body for at most [`LINGER`], off the request's
/// task, so that the answer goes out now.
pub(super) fn linger(mut stream: axum::body::BodyDataStream) {
    tokio::spawn(async move {
        let _ = tokio::time::timeout(LINGER, async {
            while let Some(Ok(_)) = stream.next().await {}
        })
        .await;
    });
}
