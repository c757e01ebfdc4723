//! The budget of long-lived event streams (issue 35): a session's `GET` stream (and its
//! resumptions with `Last-Event-ID`) holds a connection for as long as the client keeps
//! it, and SSE keep-alive pings keep it from ever timing out. rmcp allows 33 such streams
//! a session; 17 sessions' worth filled the 512 connections, and every later connection,
//! `/healthz` and other clients' `initialize` included, waited in the backlog.
//!
//! Here the streams have a budget below the connection cap: at most `max_streams` in all
//! (a new one over it gets `503` with `Retry-After`), and a share for each holder: at most
//! `max_streams_per_session` for one session, `max_streams_per_subject` for one verified
//! subject and `max_streams_per_client` for one client address (issue 57; behind a trusted
//! proxy, the client it names: `clients.rs`). A new stream over a holder's share closes
//! that holder's oldest: a client that reconnects gets its stream, and a client that opens
//! streams, or sessions, in a loop only replaces its own.

use std::{
    collections::{HashMap, VecDeque},
    net::IpAddr,
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

/// The streams open now, in all and by whom they are held.
pub(super) struct StreamBudget {
    max_total: usize,
    caps: Caps,
    open: Mutex<Open>,
}

/// The most streams one holder may have.
#[derive(Clone, Copy, Debug)]
pub(super) struct Caps {
    pub(super) per_session: usize,
    pub(super) per_subject: usize,
    pub(super) per_client: usize,
}

/// Who holds a stream, each with a share of its own: its session, the subject of its
/// verified token, and its client's address.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Holder {
    Session(String),
    Subject(String),
    Client(IpAddr),
}

/// Who opens a stream.
pub(super) struct Opener<'a> {
    pub(super) session: &'a str,
    pub(super) subject: Option<&'a str>,
    pub(super) client: Option<IpAddr>,
}

/// What [`StreamBudget`] counts, under one lock.
#[derive(Default)]
struct Open {
    /// Every stream holding a place, by number: its holders and what ends it. A stream
    /// closed to make room leaves at once, and its place goes to the one that replaced it.
    streams: HashMap<u64, Placed>,
    /// Each holder's streams holding a place, oldest first.
    by_holder: HashMap<Holder, VecDeque<u64>>,
    next: u64,
}

/// One stream's entry in [`Open`].
struct Placed {
    holders: Vec<Holder>,
    close: CancellationToken,
}

impl Open {
    /// Takes stream `number` out of the count (and out of its holders' lists); what ends
    /// it, when it was still there.
    fn remove(&mut self, number: u64) -> Option<CancellationToken> {
        let placed = self.streams.remove(&number)?;
        for holder in placed.holders {
            if let Some(streams) = self.by_holder.get_mut(&holder) {
                streams.retain(|held| *held != number);
                if streams.is_empty() {
                    self.by_holder.remove(&holder);
                }
            }
        }
        Some(placed.close)
    }
}

/// One stream's place in the budget, held by its body; dropping it frees the place.
pub(super) struct StreamTicket {
    budget: Arc<StreamBudget>,
    number: u64,
    close: CancellationToken,
}

impl StreamBudget {
    pub(super) fn new(max_total: usize, caps: Caps) -> Arc<Self> {
        Arc::new(Self {
            max_total: max_total.max(1),
            caps: Caps {
                per_session: caps.per_session.max(1),
                per_subject: caps.per_subject.max(1),
                per_client: caps.per_client.max(1),
            },
            open: Mutex::default(),
        })
    }

    /// A place for a new stream of `opener`: every holder of it that has as many as it
    /// may gives up its oldest (which ends), and the new stream takes a place freed so, or
    /// a free one; the refusal to send when every place is taken.
    pub(super) fn open(self: &Arc<Self>, opener: &Opener<'_>) -> Result<StreamTicket, Full> {
        let mut holders = vec![(
            Holder::Session(opener.session.to_owned()),
            self.caps.per_session,
        )];
        if let Some(subject) = opener.subject {
            holders.push((Holder::Subject(subject.to_owned()), self.caps.per_subject));
        }
        if let Some(client) = opener.client {
            holders.push((Holder::Client(client), self.caps.per_client));
        }
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        for (holder, cap) in &holders {
            while let Some(&oldest) = open
                .by_holder
                .get(holder)
                .filter(|streams| streams.len() >= *cap)
                .and_then(VecDeque::front)
            {
                // Its body ends at once, and its ticket no longer holds a place.
                if let Some(close) = open.remove(oldest) {
                    close.cancel();
                }
            }
        }
        if open.streams.len() >= self.max_total {
            tracing::warn!(target: "fusion::server", max_streams = self.max_total, "an event stream was refused: the server holds as many as it may");
            return Err(Full(self.max_total));
        }
        let number = open.next;
        open.next += 1;
        let close = CancellationToken::new();
        for (holder, _) in &holders {
            open.by_holder
                .entry(holder.clone())
                .or_default()
                .push_back(number);
        }
        open.streams.insert(
            number,
            Placed {
                holders: holders.into_iter().map(|(holder, _)| holder).collect(),
                close: close.clone(),
            },
        );
        Ok(StreamTicket {
            budget: Arc::clone(self),
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
            .streams
            .len()
    }
}

impl Drop for StreamTicket {
    fn drop(&mut self) {
        let mut open = self
            .budget
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // A stream closed to make room gave its place away already.
        open.remove(self.number);
    }
}

/// Why a stream's connection was cut: another stream of the same holder took its place.
#[derive(Debug, thiserror::Error)]
#[error("the event stream was closed: its holder opened more than it may hold")]
struct Replaced;

impl StreamTicket {
    /// `response` with its body holding this ticket: the place is freed when the stream
    /// ends or the client goes. When a holder opens one stream too many, the body of its
    /// oldest ends with an error, so that its connection closes too (a clean end would
    /// leave it open for the next request, still counted against the peer in `conn.rs`,
    /// and a client opening streams in a loop would fill its connections with them).
    pub(super) fn hold(self, response: Response) -> Response {
        let (parts, body) = response.into_parts();
        let close = self.close.clone();
        let replaced = self.close.clone();
        let cut = futures_util::stream::once(async move {
            replaced
                .is_cancelled()
                .then(|| Err(axum::Error::new(Replaced)))
        })
        .filter_map(std::future::ready);
        let stream = body
            .into_data_stream()
            .take_until(close.cancelled_owned())
            .chain(cut)
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

    fn budget(max_total: usize, per_session: usize) -> Arc<StreamBudget> {
        StreamBudget::new(
            max_total,
            Caps {
                per_session,
                per_subject: 100,
                per_client: 100,
            },
        )
    }

    fn session(session: &str) -> Opener<'_> {
        Opener {
            session,
            subject: None,
            client: None,
        }
    }

    /// Waits for the end of `response`'s body: whether it was cut (an error, which
    /// closes the connection) before it ended.
    async fn ended_cut(response: Response) -> bool {
        let mut body = response.into_body().into_data_stream();
        let wait = std::time::Duration::from_secs(5);
        let first = tokio::time::timeout(wait, body.next()).await;
        let cut = matches!(first, Ok(Some(Err(_))));
        let last = tokio::time::timeout(wait, body.next()).await;
        assert!(matches!(last, Ok(None)), "the body ended");
        cut
    }

    #[tokio::test]
    async fn a_session_over_its_share_closes_its_oldest_stream() {
        let budget = budget(10, 2);
        let first = budget
            .open(&session("s"))
            .expect("room")
            .hold(stream_response());
        let _second = budget
            .open(&session("s"))
            .expect("room")
            .hold(stream_response());
        assert_eq!(budget.in_use(), 2);
        let _third = budget
            .open(&session("s"))
            .expect("room")
            .hold(stream_response());
        // The first stream's body ends, cut: its client sees the stream and its
        // connection close.
        assert!(ended_cut(first).await, "the oldest stream was cut");
        assert_eq!(budget.in_use(), 2, "its place went with it");
    }

    #[tokio::test]
    async fn past_the_total_a_stream_is_refused_until_one_ends() {
        let budget = budget(3, 2);
        let _x = budget
            .open(&session("x"))
            .expect("room")
            .hold(stream_response());
        let a = budget
            .open(&session("a"))
            .expect("room")
            .hold(stream_response());
        let _b = budget
            .open(&session("b"))
            .expect("room")
            .hold(stream_response());
        let refused = budget
            .open(&session("c"))
            .err()
            .expect("full")
            .into_response();
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(refused.headers().contains_key(header::RETRY_AFTER));
        drop(a);
        let _c = budget.open(&session("c")).expect("a place freed");
        assert!(
            budget.open(&session("b")).is_err(),
            "full, and b holds less than its share"
        );
    }

    #[tokio::test]
    async fn a_full_server_still_lets_a_session_replace_its_own_oldest_stream() {
        let budget = budget(3, 2);
        let _b1 = budget
            .open(&session("b"))
            .expect("room")
            .hold(stream_response());
        let _b2 = budget
            .open(&session("b"))
            .expect("room")
            .hold(stream_response());
        let _x = budget
            .open(&session("x"))
            .expect("room")
            .hold(stream_response());
        assert!(budget.open(&session("d")).is_err(), "full");
        let _b3 = budget.open(&session("b")).expect("b's oldest makes room");
        assert_eq!(budget.in_use(), 3);
        assert!(budget.open(&session("d")).is_err(), "still full");
    }

    #[tokio::test]
    async fn a_client_opening_sessions_in_a_loop_only_replaces_its_own_streams() {
        let budget = StreamBudget::new(
            100,
            Caps {
                per_session: 2,
                per_subject: 100,
                per_client: 3,
            },
        );
        let flooder: IpAddr = "192.0.2.66".parse().expect("an address");
        let other: IpAddr = "192.0.2.7".parse().expect("an address");
        let theirs = budget
            .open(&Opener {
                session: "other",
                subject: None,
                client: Some(other),
            })
            .expect("room")
            .hold(stream_response());
        let mut held = Vec::new();
        for index in 0..20 {
            let name = format!("flood-{index}");
            let opener = Opener {
                session: &name,
                subject: None,
                client: Some(flooder),
            };
            held.push(budget.open(&opener).expect("room").hold(stream_response()));
        }
        assert_eq!(
            budget.in_use(),
            4,
            "the flooder's three and the other's one"
        );
        let cut = held.drain(..17);
        for response in cut {
            assert!(ended_cut(response).await, "replaced streams end");
        }
        drop(theirs);
        assert_eq!(budget.in_use(), 3);
    }

    #[tokio::test]
    async fn a_subject_holds_its_share_over_every_session_and_address() {
        let budget = StreamBudget::new(
            100,
            Caps {
                per_session: 2,
                per_subject: 2,
                per_client: 100,
            },
        );
        let mut held = Vec::new();
        for index in 0..5_u8 {
            let name = format!("s{index}");
            let opener = Opener {
                session: &name,
                subject: Some("alice"),
                client: Some(IpAddr::from([192, 0, 2, index])),
            };
            held.push(budget.open(&opener).expect("room").hold(stream_response()));
        }
        assert_eq!(budget.in_use(), 2);
        let _bob = budget
            .open(&Opener {
                session: "b",
                subject: Some("bob"),
                client: None,
            })
            .expect("room");
        assert_eq!(budget.in_use(), 3);
    }
}
