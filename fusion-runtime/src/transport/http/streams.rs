//! The budget of long-lived event streams (issue 35): a session's `GET` stream (and its
//! resumptions with `Last-Event-ID`) holds a connection for as long as the client keeps
//! it, and SSE keep-alive pings keep it from ever timing out. rmcp allows 33 such streams
//! a session; 17 sessions' worth filled the 512 connections, and every later connection,
//! `/healthz` and other clients' `initialize` included, waited in the backlog.
//!
//! Here the streams have a budget below the connection cap: at most `max_streams` in all
//! (a new one over it gets `503` with `Retry-After`), and at most `max_streams_per_session`
//! for one session (a new one closes that session's oldest: a client that reconnects gets
//! its stream, and a client that opens streams in a loop only replaces its own). A peer's
//! share is bounded by the connections it may hold (`conn.rs`).

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex, PoisonError},
};

use axum::{
    body::Body,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse as _, Response},
};
use futures_util::StreamExt as _;
use tokio_util::sync::CancellationToken;

/// How long a client refused a stream is asked to wait before it tries again, in seconds.
const RETRY_AFTER_SECONDS: &str = "5";

/// The streams open now, in all and per session.
pub(super) struct StreamBudget {
    max_total: usize,
    per_session: usize,
    open: Mutex<Open>,
}

/// What [`StreamBudget`] counts, under one lock.
#[derive(Default)]
struct Open {
    /// Streams holding a place: every stream not yet ended, minus those closed to make
    /// room (they end at once, and their place goes to the stream that replaced them).
    total: usize,
    /// Each session's streams holding a place, oldest first, with what ends them.
    by_session: HashMap<String, VecDeque<(u64, CancellationToken)>>,
    next: u64,
}

/// One stream's place in the budget, held by its body; dropping it frees the place.
pub(super) struct StreamTicket {
    budget: Arc<StreamBudget>,
    session: String,
    number: u64,
    close: CancellationToken,
}

impl StreamBudget {
    pub(super) fn new(max_total: usize, per_session: usize) -> Arc<Self> {
        Arc::new(Self {
            max_total: max_total.max(1),
            per_session: per_session.max(1),
            open: Mutex::default(),
        })
    }

    /// A place for a new stream of `session`: the place of that session's oldest stream
    /// (which ends) when it holds as many as it may, else a free one; the refusal to send
    /// when every place is taken.
    pub(super) fn open(self: &Arc<Self>, session: &str) -> Result<StreamTicket, Full> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let open = &mut *open;
        let streams = open.by_session.entry(session.to_owned()).or_default();
        if streams.len() >= self.per_session {
            if let Some((_, oldest)) = streams.pop_front() {
                // Its body ends at once, and its ticket no longer holds a place.
                oldest.cancel();
                open.total -= 1;
            }
        } else if open.total >= self.max_total {
            if streams.is_empty() {
                open.by_session.remove(session);
            }
            tracing::warn!(target: "fusion::server", max_streams = self.max_total, "an event stream was refused: the server holds as many as it may");
            return Err(Full(self.max_total));
        }
        let number = open.next;
        open.next += 1;
        let close = CancellationToken::new();
        if let Some(streams) = open.by_session.get_mut(session) {
            streams.push_back((number, close.clone()));
        }
        open.total += 1;
        Ok(StreamTicket {
            budget: Arc::clone(self),
            session: session.to_owned(),
            number,
            close,
        })
    }

    /// How many streams hold a place now.
    #[cfg(test)]
    fn in_use(&self) -> usize {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .total
    }
}

impl Drop for StreamTicket {
    fn drop(&mut self) {
        let mut open = self
            .budget
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let open = &mut *open;
        let Some(streams) = open.by_session.get_mut(&self.session) else {
            return;
        };
        let before = streams.len();
        streams.retain(|(number, _)| *number != self.number);
        // A stream closed to make room gave its place away already.
        if streams.len() < before {
            open.total -= 1;
        }
        if streams.is_empty() {
            open.by_session.remove(&self.session);
        }
    }
}

impl StreamTicket {
    /// `response` with its body holding this ticket: the place is freed when the stream
    /// ends or the client goes, and the body ends when its session opens one stream too
    /// many.
    pub(super) fn hold(self, response: Response) -> Response {
        let (parts, body) = response.into_parts();
        let close = self.close.clone();
        let stream = body
            .into_data_stream()
            .take_until(close.cancelled_owned())
            .map(move |chunk| {
                let _held = &self;
                chunk
            });
        Response::from_parts(parts, Body::from_stream(stream))
    }
}

/// Every stream place is taken (there are this many).
#[derive(Debug)]
pub(super) struct Full(usize);

impl Full {
    /// `503` with `Retry-After`.
    pub(super) fn into_response(self) -> Response {
        let Self(max) = self;
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [(
                header::RETRY_AFTER,
                HeaderValue::from_static(RETRY_AFTER_SECONDS),
            )],
            format!("the server holds as many event streams as it may ({max}); try again later\n"),
        )
            .into_response()
    }
}

/// Whether `response` is an event stream (what a ticket is held for).
pub(super) fn is_event_stream(response: &Response) -> bool {
    response.status() == StatusCode::OK
        && response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream_response() -> Response {
        let body = Body::from_stream(futures_util::stream::pending::<
            Result<axum::body::Bytes, std::io::Error>,
        >());
        Response::builder()
            .header(header::CONTENT_TYPE, "text/event-stream")
            .body(body)
            .expect("a response")
    }

    #[tokio::test]
    async fn a_session_over_its_share_closes_its_oldest_stream() {
        let budget = StreamBudget::new(10, 2);
        let first = budget.open("s").expect("room").hold(stream_response());
        let _second = budget.open("s").expect("room").hold(stream_response());
        assert_eq!(budget.in_use(), 2);
        let _third = budget.open("s").expect("room").hold(stream_response());
        // The first stream's body ends: its client sees the stream close.
        let mut first = first.into_body().into_data_stream();
        let ended = tokio::time::timeout(std::time::Duration::from_secs(5), first.next()).await;
        assert!(matches!(ended, Ok(None)), "the oldest stream ended");
        drop(first);
        assert_eq!(budget.in_use(), 2, "its place went with it");
    }

    #[tokio::test]
    async fn past_the_total_a_stream_is_refused_until_one_ends() {
        let budget = StreamBudget::new(3, 2);
        let _x = budget.open("x").expect("room").hold(stream_response());
        let a = budget.open("a").expect("room").hold(stream_response());
        let _b = budget.open("b").expect("room").hold(stream_response());
        let refused = budget.open("c").err().expect("full").into_response();
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(refused.headers().contains_key(header::RETRY_AFTER));
        drop(a);
        let _c = budget.open("c").expect("a place freed");
        assert!(
            budget.open("b").is_err(),
            "full, and b holds less than its share"
        );
    }

    #[tokio::test]
    async fn a_full_server_still_lets_a_session_replace_its_own_oldest_stream() {
        let budget = StreamBudget::new(3, 2);
        let _b1 = budget.open("b").expect("room").hold(stream_response());
        let _b2 = budget.open("b").expect("room").hold(stream_response());
        let _x = budget.open("x").expect("room").hold(stream_response());
        assert!(budget.open("d").is_err(), "full");
        let _b3 = budget.open("b").expect("b's oldest makes room");
        assert_eq!(budget.in_use(), 3);
        assert!(budget.open("d").is_err(), "still full");
    }
}
