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

use futures_util::{Stream, StreamExt};

use super::link_error::LinkError;

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
    let chunks = futures_util::stream::unfold(Some(response), move |response| {
        let counted = Arc::clone(&counted);
        async move {
            let mut response = response?;
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    let so_far = counted
                        .fetch_add(chunk.len(), Ordering::Relaxed)
                        .saturating_add(chunk.len());
                    if so_far > limit {
                        Some((Err(BodyError::TooLarge), None))
                    } else {
                        Some((Ok(chunk), Some(response)))
                    }
                }
                Ok(None) => None,
                Err(error) => Some((Err(BodyError::Read(crate::tls::without_url(&error))), None)),
            }
        }
    });
    sse_stream::SseStream::from_bytes_stream(chunks).filter_map(move |event| {
        let item = match event {
            Ok(event) => {
                if matches!(bound, Bound::EachEvent) {
                    // What the parser still holds is at most the rest of the last chunk.
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
