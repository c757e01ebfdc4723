//! The session's GET stream of an HTTP upstream: what the upstream sends on its own, not in
//! answer to a call ("Listening for Messages from the Server" in the Streamable HTTP
//! transport). The official Python SDK sends `notifications/tools/list_changed` there, so
//! without it a gateway would learn of a change only at `refresh_every`.
//!
//! Opened only when useful and possible:
//! - the upstream declared `tools.listChanged: true` in its `initialize` answer (the one
//!   message of the stream the gateway acts on is that notification);
//! - the session has an id (a stateless upstream has no stream to name);
//! - the upstream is called with its configured credential ([`Identity::Configured`]); one
//!   called with each caller's own or exchanged token has no caller here: the stream
//!   outlives every call, and holding one caller's token open for it would make that caller
//!   the gateway's identity (and end when their token expires).
//!
//! What arrives is treated as inside a POST's answer: `list_changed` tells the refresh
//! (`refresh.rs`, which coalesces and spaces the listings), a request is answered (`ping`)
//! or refused, anything else is dropped. A notification sent while no stream was open is
//! lost (nothing is replayed), so each stream opened is followed by one listing.
//!
//! Bounds: one stream at a time; an event over `max_message` ends it; events are handled
//! one at a time, with no queue between the socket and the handling (a flood is read as
//! fast as it is handled, and costs one stored `Notify` permit); a stream that sends
//! nothing holds only its connection. An upstream that refuses the stream (`405`, any other
//! `4xx`, or an answer that is not SSE) is not asked again on that session; one that ends or
//! breaks it is asked again after 1 s, doubling to 30 s. A `404` says the upstream forgot
//! the session (it restarted) or has no stream: a `ping` on the session tells which, and a
//! forgotten session is renewed at once, as a call would renew it. A new session (made
//! there, or by a call that found its session forgotten) gets a stream of its own at once.
//!
//! [`Identity::Configured`]: super::identity::Identity::Configured

use std::{sync::Arc, time::Duration};

use futures_util::StreamExt;
use reqwest::{StatusCode, header::CONTENT_TYPE};
use tokio::time::Instant;

use super::{
    http::{HttpLink, Session},
    link_error::LinkError,
    rpc,
    sse::{self, Bound},
};

/// The first wait before a stream that ended is opened again, and the longest.
const FIRST_REOPEN: Duration = Duration::from_secs(1);
const LAST_REOPEN: Duration = Duration::from_secs(30);

/// How long the upstream may take to answer the GET, or to take an answer to its request.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// How a stream ended.
enum Ended {
    /// The upstream does not offer one on this session: not asked again until a new one.
    Refused(String),
    /// It ended or broke: opened again after a wait.
    Closed(String),
    /// `404`: the upstream forgot the session (it restarted), or has no GET stream at all
    /// ([`not_found`] tells which).
    NotFound(String),
}

/// Keeps the GET stream of `link`'s configured session open, for as long as the future is
/// polled (the mount's refresh task holds it, and ends with the server).
pub(super) async fn listen(link: &HttpLink) {
    let mut changes = link.session_changes();
    // The session whose stream was refused: held, so that its address is not another's.
    let mut refused: Option<Arc<Session>> = None;
    let mut wait = FIRST_REOPEN;
    loop {
        changes.borrow_and_update();
        let session = link.configured_session().filter(|session| {
            useful(session)
                && !refused
                    .as_ref()
                    .is_some_and(|gone| Arc::ptr_eq(gone, session))
        });
        let Some(session) = session else {
            // Nothing to open until another session is made.
            if changes.changed().await.is_err() {
                return;
            }
            continue;
        };
        let opened = Instant::now();
        let ended = tokio::select! {
            ended = read(link, &session) => ended,
            changed = changes.changed() => {
                if changed.is_err() {
                    return;
                }
                // Another session: its stream is opened at once.
                wait = FIRST_REOPEN;
                continue;
            }
        };
        let ended = match ended {
            Ended::NotFound(why) => match not_found(link, &session, why).await {
                Some(ended) => ended,
                // A new session: its stream is opened at once.
                None => {
                    wait = FIRST_REOPEN;
                    continue;
                }
            },
            ended => ended,
        };
        match ended {
            Ended::Refused(why) => {
                tracing::debug!(target: "fusion::upstream", reason = %why, "the upstream offers no GET stream on this session");
                refused = Some(session);
            }
            // (`not_found` turns every `NotFound` into one of the others.)
            Ended::Closed(why) | Ended::NotFound(why) => {
                // A stream that lasted was a working one: its successor starts the backoff
                // afresh.
                if opened.elapsed() >= LAST_REOPEN {
                    wait = FIRST_REOPEN;
                }
                tracing::debug!(target: "fusion::upstream", reason = %why, reopen_in = ?wait, "the upstream's GET stream ended");
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    changed = changes.changed() => {
                        if changed.is_err() {
                            return;
                        }
                    }
                }
                wait = (wait * 2).min(LAST_REOPEN);
            }
        }
    }
}

/// Whether `session` has a stream worth holding: it has an id, and the upstream said it
/// tells of changes to its tools.
fn useful(session: &Session) -> bool {
    session.id.is_some() && declares_list_changed(&session.init)
}

/// Whether an `initialize` result declares `tools.listChanged: true` (absent or anything
/// else: the upstream does not say it will tell).
fn declares_list_changed(init: &serde_json::Value) -> bool {
    init.pointer("/capabilities/tools/listChanged")
        .and_then(serde_json::Value::as_bool)
        == Some(true)
}

/// After a `404` to the GET, which the transport gives for a session the upstream no
/// longer knows: a `ping` on the session tells whether it does. When it does not, the link
/// makes a new session (as for a call, `HttpLink::request`) and `None` says so: its stream
/// is opened next. When it still answers there, the `404` was the upstream's way of saying it
/// has no stream (`Refused`); when the ping gets no answer, the stream is tried again later
/// (`Closed`).
async fn not_found(link: &HttpLink, session: &Arc<Session>, why: String) -> Option<Ended> {
    let pinged = tokio::time::timeout(
        ANSWER_TIMEOUT,
        link.request(rpc::PING, serde_json::json!({}), None, None),
    )
    .await;
    let renewed = !link
        .configured_session()
        .is_some_and(|now| Arc::ptr_eq(&now, session));
    if renewed {
        tracing::debug!(target: "fusion::upstream", reason = %why, "the upstream forgot the session of its GET stream: a new session's is opened");
        return None;
    }
    Some(match pinged {
        // An answer, or a JSON-RPC error (an upstream that does not serve `ping`): the
        // session is alive, and has no stream.
        Ok(Ok(_) | Err(LinkError::Rpc { .. })) => Ended::Refused(why),
        Ok(Err(error)) => Ended::Closed(format!("{why}; the session's ping failed: {error}")),
        Err(_) => Ended::Closed(format!(
            "{why}; the session's ping got no answer within {ANSWER_TIMEOUT:?}"
        )),
    })
}

/// Opens `session`'s stream and reads it until it ends.
async fn read(link: &HttpLink, session: &Session) -> Ended {
    let response = match tokio::time::timeout(ANSWER_TIMEOUT, link.open_stream(session)).await {
        Ok(Ok(response)) => response,
        Ok(Err(error)) => return Ended::Closed(error.to_string()),
        Err(_) => return Ended::Closed(format!("no answer to the GET within {ANSWER_TIMEOUT:?}")),
    };
    let status = response.status();
    if !status.is_success() {
        // A busy or failing upstream may offer one later; any other refusal is its answer
        // for the session (`405`: it has none, `404`: it forgot the session).
        let why = format!("the GET was answered {status}");
        return if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
            Ended::Closed(why)
        } else if status == StatusCode::NOT_FOUND {
            Ended::NotFound(why)
        } else {
            Ended::Refused(why)
        };
    }
    let is_stream = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"));
    if !is_stream {
        return Ended::Refused("the GET was not answered with an event stream".to_owned());
    }
    // What was said while no stream was open is lost: the tools are listed once more.
    link.tools_changed().notify_one();
    let mut events = std::pin::pin!(sse::events(response, link.max_message(), Bound::EachEvent));
    while let Some(data) = events.next().await {
        // A flood arrives as fast as it is read: the task yields to the others (the calls)
        // when its budget is spent, as it would on a socket.
        tokio::task::consume_budget().await;
        let data = match data {
            Ok(data) => data,
            Err(error) => return Ended::Closed(error.to_string()),
        };
        match rpc::read(data.as_bytes()) {
            // One stored permit however many come: a flood costs one more listing.
            rpc::Incoming::Notification { method } if method == rpc::TOOLS_CHANGED => {
                link.tools_changed().notify_one();
            }
            rpc::Incoming::Request { id, method } => {
                // As inside a POST's answer; bounded, so that an upstream that does not
                // take the answer cannot stall the stream for long.
                let answer = rpc::answer_to(&id, &method);
                if tokio::time::timeout(ANSWER_TIMEOUT, link.reply(Some(session), answer))
                    .await
                    .is_err()
                {
                    tracing::debug!(target: "fusion::upstream", "an answer to the upstream's request on its GET stream was not taken in time");
                }
            }
            rpc::Incoming::Notification { method } => {
                tracing::debug!(target: "fusion::upstream", method = %crate::limits::name(&method), "a notification on the upstream's GET stream is ignored");
            }
            rpc::Incoming::Answer { .. }
            | rpc::Incoming::Progress { .. }
            | rpc::Incoming::Unreadable(_) => {
                tracing::debug!(target: "fusion::upstream", "a message on the upstream's GET stream that no call waits for is ignored");
            }
        }
    }
    Ended::Closed("the stream ended".to_owned())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::declares_list_changed;

    #[test]
    fn only_a_declared_list_changed_is_worth_a_stream() {
        assert!(declares_list_changed(
            &json!({"capabilities": {"tools": {"listChanged": true}}})
        ));
        for init in [
            json!({"capabilities": {"tools": {"listChanged": false}}}),
            json!({"capabilities": {"tools": {}}}),
            json!({"capabilities": {"tools": {"listChanged": "yes"}}}),
            json!({"capabilities": {}}),
            json!({}),
        ] {
            assert!(!declares_list_changed(&init), "{init}");
        }
    }
}
