//! Server-sent events read from an upstream's response, under a byte limit: the one parser
//! of a POST's event stream (`http.rs`) and of the session's GET stream (`get_stream.rs`).
//!
//! A POST's answer is bounded as a whole (one call costs at most `max_message`); the GET
//! stream lives as long as the session, so it is bounded event by event instead: the bytes
//! read since the last event, which is what the parser can hold, never pass the limit.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use bytes::Bytes;
use futures_util::{Stream, StreamExt};

use super::link_error::LinkError;

/// The most bytes handed to the parser at once: small, since each piece is one unit of the
/// task's budget (a flood yields to the calls every 128 pieces).
const PIECE: usize = 4 * 1024;

/// What the limit bounds.
#[derive(Clone, Copy)]
pub(super) enum Bound {
    /// The whole body: a call's answer.
    Whole,
    /// Each event: a stream that lasts.
    EachEvent,
}

/// The `data` of each event of `response` that has one, in order; an error ends the stream
/// (the body broke, it is not SSE, or it passed `limit` bytes as `bound` counts them).
pub(super) fn events(
    response: reqwest::Response,
    limit: usize,
    bound: Bound,
) -> impl Stream<Item = Result<String, LinkError>> + Send {
    // Bytes read since the count was last reset: never, or at each event.
    let read = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&read);
    // Each chunk is handed to the parser in pieces, so that the events of one piece are
    // read (and the count reset) before the next is counted: a burst of small events in one
    // large chunk is not taken for one large event.
    // Small beside the limit: an event is cut off only past about `limit` bytes.
    let piece = PIECE.min(limit / 4).max(1);
    let chunks = futures_util::stream::unfold(
        (Some(response), Bytes::new()),
        move |(response, mut rest)| {
            let counted = Arc::clone(&counted);
            async move {
                let mut response = response?;
                // A body that is always ready (a flood) would keep the task parsing: it
                // yields to the others when its budget is spent, as on a socket.
                tokio::task::consume_budget().await;
                if rest.is_empty() {
                    match response.chunk().await {
                        Ok(Some(chunk)) => rest = chunk,
                        Ok(None) => return None,
                        Err(error) => {
                            return Some((
                                Err(BodyError::Read(crate::tls::without_url(&error))),
                                (None, Default::default()),
                            ));
                        }
                    }
                }
                let piece = rest.split_to(rest.len().min(piece));
                let so_far = counted
                    .fetch_add(piece.len(), Ordering::Relaxed)
                    .saturating_add(piece.len());
                if so_far > limit {
                    Some((Err(BodyError::TooLarge), (None, Default::default())))
                } else {
                    Some((Ok(piece), (Some(response), rest)))
                }
            }
        },
    );
    sse_stream::SseStream::from_bytes_stream(chunks).filter_map(move |event| {
        let item = match event {
            Ok(event) => {
                if matches!(bound, Bound::EachEvent) {
                    // What the parser still holds is at most the rest of the last piece.
                    read.store(0, Ordering::Relaxed);
                }
                event.data.map(Ok)
            }
            Err(sse_stream::Error::Body(error)) => {
                Some(Err(match error.downcast_ref::<BodyError>() {
                    Some(BodyError::TooLarge) => LinkError::TooLarge { limit },
                    _ => LinkError::Lost(format!("the event stream broke: {error}")),
                }))
            }
            Err(error) => Some(Err(LinkError::Garbage(format!(
                "the event stream is not SSE: {error}"
            )))),
        };
        std::future::ready(item)
    })
}

/// Why an event stream's body stopped.
#[derive(Debug, thiserror::Error)]
enum BodyError {
    #[error("the stream is larger than the limit")]
    TooLarge,
    #[error("{0}")]
    Read(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(body: String) -> reqwest::Response {
        reqwest::Response::from(http::Response::new(body))
    }

    async fn read(body: String, limit: usize, bound: Bound) -> Vec<Result<String, String>> {
        events(response(body), limit, bound)
            .map(|event| event.map_err(|error| error.to_string()))
            .collect()
            .await
    }

    #[tokio::test]
    async fn a_lasting_stream_is_bounded_event_by_event_and_an_answer_as_a_whole() {
        // 1,000 events of about 100 bytes: 100 KB in all, each well under 1 KB.
        let event = format!("data: {}\n\n", "x".repeat(92));
        let body = event.repeat(1000);
        let each = read(body.clone(), 1024, Bound::EachEvent).await;
        assert_eq!(each.len(), 1000);
        assert!(each.iter().all(Result::is_ok));
        let whole = read(body, 1024, Bound::Whole).await;
        assert!(
            whole.last().is_some_and(Result::is_err),
            "{:?}",
            whole.last()
        );
        assert!(whole.len() < 20, "the answer stops at its limit");
    }

    #[tokio::test]
    async fn an_event_over_the_limit_ends_the_stream() {
        let body = format!(
            "data: small\n\ndata: {}\n\ndata: after\n\n",
            "y".repeat(50_000)
        );
        let read = read(body, 20_000, Bound::EachEvent).await;
        assert_eq!(read.first(), Some(&Ok("small".to_owned())));
        assert_eq!(read.len(), 2, "{read:?}");
        assert!(
            read[1]
                .as_ref()
                .is_err_and(|error| error.contains("20000") || error.contains("limit")),
            "{read:?}"
        );
    }
}
