//! Sessions of Streamable HTTP: rmcp's `LocalSessionManager`, wrapped to bound what a
//! session may hold and to end its calls with it (issue 15).
//!
//! - **Duplicate ids.** rmcp routes an answer by its JSON-RPC id, so a second request
//!   with an id still in flight takes over the first one's stream: it receives the first
//!   call's result, and the first stream never ends. A request whose id is in flight gets
//!   a `-32600` error on its own stream instead; the first call goes on.
//! - **Calls in flight per session** are capped: over the cap a request waits its turn
//!   in a bounded queue (first come, first served); over the queue it gets an error at
//!   once (`429` with `Retry-After` from the guard, or a JSON-RPC error on its stream when
//!   it raced the guard).
//! - **Sessions** are capped, and a session idle (no request, no call in flight) for the
//!   idle timeout ends.
//! - **A client that hangs up cancels its call** (issue 32). The id is claimed by a guard
//!   until the request reaches the session, so a request dropped on the way gives it back;
//!   once it has reached it, the answer's stream watches for the answer, and a stream
//!   dropped before it (the client closed the connection) hands the service a
//!   `notifications/cancelled` for the call: its handler is dropped, its policies' state
//!   released and its id freed, as a stdio cancel does. The session serves on.
//! - **A session that ends cancels its calls at once.** rmcp lets the handlers of a
//!   closed session run for up to 5 s more; the transport here hands the service a
//!   `notifications/cancelled` for each call in flight before it reports the end.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::Duration,
};

use axum::{
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse as _, Response},
};
use futures_util::{FutureExt as _, Stream, StreamExt as _, stream};
use rmcp::{
    RoleServer,
    model::{
        ClientJsonRpcMessage, ClientNotification, ErrorCode, ErrorData, JsonRpcMessage, RequestId,
        ServerJsonRpcMessage,
    },
    transport::{
        Transport, WorkerTransport,
        streamable_http_server::session::{
            ServerSseMessage, SessionId, SessionManager,
            local::{
                LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
                LocalSessionWorkerError, SessionConfig, SessionError,
            },
        },
    },
};
use tokio::time::Instant;

use super::{
    hang_up::{AnswerStream, Claim, answered_id, cancellation_because},
    session_entry::{Entry, Refused},
};

/// The JSON-RPC code of an answer to a request over the session's cap of calls in flight
/// (the implementation-defined server error range of JSON-RPC 2.0).
const BUSY: ErrorCode = ErrorCode(-32000);

/// The limits a [`Sessions`] enforces.
#[derive(Clone, Copy, Debug)]
pub(super) struct SessionLimits {
    pub(super) max_sessions: usize,
    pub(super) idle_timeout: Option<Duration>,
    pub(super) max_in_flight: usize,
    /// Requests that may wait for their turn behind the calls in flight.
    pub(super) max_queued: usize,
}

impl SessionLimits {
    /// Requests a session holds at most: running, and waiting for their turn.
    pub(super) fn max_requests(&self) -> usize {
        self.max_in_flight.saturating_add(self.max_queued)
    }
}

/// The session manager of [`super`]: rmcp's local one, with limits.
#[derive(Debug)]
pub(super) struct Sessions {
    inner: LocalSessionManager,
    entries: Mutex<HashMap<SessionId, Arc<Entry>>>,
    limits: SessionLimits,
}

impl Sessions {
    pub(super) fn new(limits: SessionLimits) -> Self {
        let mut config = SessionConfig::default();
        // rmcp's own idle timer also fires while a call runs without messages, which
        // would cancel a long call; the reaper here counts calls in flight as activity.
        config.keep_alive = None;
        let mut inner = LocalSessionManager::default();
        inner.session_config = config;
        Self {
            inner,
            entries: Mutex::new(HashMap::new()),
            limits,
        }
    }

    fn entries(&self) -> MutexGuard<'_, HashMap<SessionId, Arc<Entry>>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn entry(&self, id: &str) -> Option<Arc<Entry>> {
        self.entries().get(id).cloned()
    }

    /// The peers of the sessions whose clients said they are initialized: those told of
    /// list changes.
    pub(super) fn peers(&self) -> Vec<(Option<String>, rmcp::Peer<RoleServer>)> {
        self.entries()
            .iter()
            .filter_map(|(id, entry)| Some((Some(id.to_string()), entry.peer()?.clone())))
            .collect()
    }

    /// The session `id`, if it exists now.
    pub(super) fn named(&self, id: &str) -> Option<Arc<Entry>> {
        self.entry(id)
    }

    pub(super) fn limits(&self) -> SessionLimits {
        self.limits
    }

    /// Whether session `id` holds as many requests as it may (running and queued): a new
    /// one would be refused.
    pub(super) fn is_saturated(&self, id: &str) -> bool {
        self.entry(id)
            .is_some_and(|entry| entry.in_flight() >= self.limits.max_requests())
    }

    /// `429` for a request to a session that holds as many requests as it may (running and
    /// waiting), with its id and `Retry-After`; `None` for a message that is not a request
    /// (a notification or a response is taken whatever the load).
    pub(super) fn refuse_when_full(&self, body: &[u8]) -> Option<Response> {
        let is_request = serde_json::from_slice::<MethodOnly>(body)
            .is_ok_and(|message| message.method.is_some());
        let id = crate::transport::decode::find_id(body).filter(|_| is_request)?;
        Some(self.full(id))
    }

    /// `429` with `Retry-After` and the JSON-RPC error carrying `id`: the answer to a
    /// request over the session's calls in flight and its queue.
    pub(super) fn full(&self, id: RequestId) -> Response {
        let error = self.refusal(Refused::Full, &id);
        let message = ServerJsonRpcMessage::error(error, Some(id));
        match serde_json::to_vec(&message) {
            Ok(body) => (
                StatusCode::TOO_MANY_REQUESTS,
                [
                    (
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/json"),
                    ),
                    (header::RETRY_AFTER, HeaderValue::from_static("1")),
                ],
                body,
            )
                .into_response(),
            // An id and an error's text always serialize; the status still says why.
            Err(_) => (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, HeaderValue::from_static("1"))],
            )
                .into_response(),
        }
    }

    /// The error that answers a request the session cannot take.
    pub(super) fn refusal(&self, refused: Refused, id: &RequestId) -> ErrorData {
        match refused {
            Refused::IdInUse => ErrorData::new(
                ErrorCode::INVALID_REQUEST,
                format!(
                    "Invalid Request: id {} already in use by a request in flight in this session; send each request with a new id",
                    quote_id(id)
                ),
                None,
            ),
            Refused::Full => busy(self.limits),
        }
    }

    /// Whether a new session would exceed the cap.
    pub(super) fn is_full(&self) -> bool {
        self.entries().len() >= self.limits.max_sessions
    }

    /// Whether `id` names a session that exists now.
    pub(super) fn exists(&self, id: &str) -> bool {
        self.entries().contains_key(id)
    }

    /// Binds the session `id`, just created, to `subject`, the verified subject of the
    /// token that created it (MCP: servers bind session ids to the user). A session
    /// created without one stays unbound.
    pub(super) fn bind_owner(&self, id: &str, subject: &str) {
        if let Some(entry) = self.entry(id) {
            entry.lock().owner.get_or_insert_with(|| subject.to_owned());
        }
    }

    /// Whether a request by `subject` may use session `id`: an unbound session may be
    /// used by anyone who may reach the server, a bound one only by its owner (another
    /// user holding a stolen or guessed id gets what an unknown id gets).
    pub(super) fn may_use(&self, id: &str, subject: Option<&str>) -> bool {
        self.entry(id)
            .is_some_and(|entry| match &entry.lock().owner {
                Some(owner) => subject == Some(owner.as_str()),
                None => true,
            })
    }

    pub(super) fn max_sessions(&self) -> usize {
        self.limits.max_sessions
    }

    /// Ends the sessions idle for longer than the idle timeout, every `period`, until
    /// the sessions are dropped (with the router that serves them).
    pub(super) async fn reap(sessions: std::sync::Weak<Self>) {
        let Some(idle) = sessions
            .upgrade()
            .and_then(|sessions| sessions.limits.idle_timeout)
        else {
            return;
        };
        // A quarter of the timeout: a session ends at most 25% late.
        let period = (idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(30));
        let mut ticks = tokio::time::interval(period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let Some(this) = sessions.upgrade() else {
                return;
            };
            let now = Instant::now();
            let expired: Vec<SessionId> = this
                .entries()
                .iter()
                .filter(|(_, entry)| entry.idle_for(now).is_some_and(|idle_for| idle_for >= idle))
                .map(|(id, _)| id.clone())
                .collect();
            for id in expired {
                tracing::info!(target: "fusion::server", session = %id, idle_ms = idle.as_millis() as u64, "session expired after its idle timeout");
                if let Err(error) = this.close_session(&id).await {
                    tracing::warn!(target: "fusion::server", session = %id, %error, "cannot close an expired session");
                }
            }
        }
    }
}

/// The session a request names, if any (`None` also for a value that is not text, which
/// rmcp treats as absent).
pub(super) fn session_of(headers: &HeaderMap) -> Option<&str> {
    headers
        .get("mcp-session-id")
        .map(|value| value.to_str().unwrap_or(""))
}

/// Just the `method` of a JSON-RPC message, read without building the rest.
#[derive(serde::Deserialize)]
pub(super) struct MethodOnly {
    #[serde(default)]
    pub(super) method: Option<String>,
}

/// The answer to a request over the session's cap of requests in flight and queued.
pub(super) fn busy(limits: SessionLimits) -> ErrorData {
    ErrorData::new(
        BUSY,
        format!(
            "too many requests in flight in this session ({} running, {} waiting): wait for an answer, or cancel a request, before sending another",
            limits.max_in_flight, limits.max_queued
        ),
        None,
    )
}

/// The messages of a request's stream that the session answers itself.
fn answers(
    answer: Option<ServerJsonRpcMessage>,
) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static {
    stream::iter(answer.map(ServerSseMessage::from_message))
}

/// A request id as the client wrote it, cut to a readable length.
fn quote_id(id: &RequestId) -> String {
    const MAX: usize = 60;
    let text = serde_json::to_string(id).unwrap_or_else(|_| id.to_string());
    if text.chars().count() <= MAX {
        return text;
    }
    let cut: String = text.chars().take(MAX).collect();
    format!("{cut}…")
}

impl crate::setup::server::SessionPeers for Sessions {
    fn initialized(&self, extensions: &rmcp::model::Extensions, peer: &rmcp::Peer<RoleServer>) {
        let session = extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| session_of(&parts.headers));
        if let Some(entry) = session.and_then(|id| self.entry(id)) {
            entry.set_peer(peer);
        }
    }

    fn swap_shown(&self, extensions: &rmcp::model::Extensions, fingerprint: u64) -> Option<u64> {
        let id = extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| session_of(&parts.headers))?;
        self.entry(id)?.swap_shown(fingerprint)
    }
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = SessionTransport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        // The guard answers 503 before this in the common case; this holds the cap when
        // several initializations race.
        if self.is_full() {
            return Err(SessionError::Io(std::io::Error::other(format!(
                "the session limit ({}) is reached",
                self.limits.max_sessions
            )))
            .into());
        }
        let (id, transport) = self.inner.create_session().await?;
        let entry = Entry::new(self.limits.max_in_flight);
        self.entries().insert(id.clone(), Arc::clone(&entry));
        Ok((
            id,
            SessionTransport {
                inner: transport,
                entry,
                pending: VecDeque::new(),
                ended: false,
            },
        ))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        if let Some(entry) = self.entry(id) {
            entry.touch();
        }
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.entries().remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let claimed = match (&message, self.entry(id)) {
            (JsonRpcMessage::Request(request), Some(entry)) => {
                let request_id = request.id.clone();
                match entry.claim(&request_id, self.limits.max_requests(), None) {
                    Ok(number) => Some(Claim::new(entry, request_id, number)),
                    Err(refused) => {
                        let error = self.refusal(refused, &request_id);
                        return Ok(answers(Some(ServerJsonRpcMessage::error(
                            error,
                            Some(request_id),
                        )))
                        .left_stream());
                    }
                }
            }
            _ => None,
        };
        // The awaits below may be the last (the client hung up): the claim's `Drop` then
        // gives the id back.
        let session = match &claimed {
            Some(claim) => {
                // Await: the request's turn among the calls that may run at once.
                if !claim.take_turn().await {
                    // Cancelled while it waited (or the session ended): no answer, as for
                    // any cancelled request.
                    return Ok(answers(None).left_stream());
                }
                self.inner.sessions.read().await.get(id).cloned()
            }
            None => None,
        };
        let answers = self.inner.create_stream(id, message).await?;
        // The request reached the session: from here its answer, or a hang-up, frees it.
        Ok(AnswerStream::new(answers, claimed, session).right_stream())
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        if let Some(entry) = self.entry(id) {
            entry.touch();
            // rmcp sends no answer for a cancelled request: its id is free from now on.
            if let JsonRpcMessage::Notification(notification) = &message
                && let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                && let Some(request_id) = &cancelled.params.request_id
            {
                entry.finish(request_id);
            }
        }
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        if let Some(entry) = self.entry(id) {
            entry.touch();
        }
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        if let Some(entry) = self.entry(id) {
            entry.touch();
        }
        self.inner.resume(id, last_event_id).await
    }
}

/// rmcp's session transport, seen by the service: it frees a request's id once its
/// answer is routed, and cancels the calls in flight when the session ends.
pub(super) struct SessionTransport {
    inner: WorkerTransport<LocalSessionWorker>,
    entry: Arc<Entry>,
    /// Cancellations still to hand to the service after the session ended.
    pending: VecDeque<ClientJsonRpcMessage>,
    ended: bool,
}

fn cancellation(id: RequestId) -> ClientJsonRpcMessage {
    cancellation_because(
        id,
        "the session ended (deleted by the client, expired, or closed)",
    )
}

impl Transport<RoleServer> for SessionTransport {
    type Error = LocalSessionWorkerError;

    // The error is rmcp's, and this passes it on as it came.
    #[expect(
        clippy::result_large_err,
        reason = "the transport's error type is rmcp's LocalSessionWorkerError"
    )]
    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answered = answered_id(&item).cloned();
        let entry = Arc::clone(&self.entry);
        // Boxed, and wrapped by `map` rather than an `async` block: rmcp's service loop
        // awaits a send inline (while draining), so its future, which lives as long as
        // the session, keeps room for this one. rmcp's own send future is 1.8 KB, and an
        // `async` block awaiting it held it twice (the captured future and the one being
        // awaited): 1.8 KB more per session than rmcp's own sessions (issue 32). The box
        // costs one allocation per message sent through rmcp's loop; `tools/call` goes
        // past it (`direct.rs`).
        Box::pin(self.inner.send(item)).map(move |sent| {
            // The id is freed once the session routed the answer, not before: a request
            // reusing the id earlier would take over this answer's stream.
            if let Some(id) = answered {
                entry.finish(&id);
            }
            sent
        })
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        // Cancel-safe: the service polls this in a `select!`. The only await is rmcp's
        // channel receive, and the state changes after it are synchronous.
        if let Some(message) = self.pending.pop_front() {
            return Some(message);
        }
        if self.ended {
            return None;
        }
        if let Some(message) = self.inner.receive().await {
            return Some(message);
        }
        // The session ended. rmcp would let its handlers run for up to 5 s before
        // cancelling them; cancel each call in flight now instead (issue 15).
        self.ended = true;
        let in_flight = self.entry.end_all();
        if !in_flight.is_empty() {
            tracing::info!(target: "fusion::server", calls = in_flight.len(), "session ended: cancelling its calls in flight");
        }
        self.pending = in_flight.into_iter().map(cancellation).collect();
        self.pending.pop_front()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_ids_are_cut_in_messages() {
        assert_eq!(quote_id(&RequestId::Number(43)), "43");
        assert_eq!(quote_id(&RequestId::String("a".into())), "\"a\"");
        let long = RequestId::String("x".repeat(1000).into());
        assert!(quote_id(&long).chars().count() <= 61);
    }
}
