//! An upstream over Streamable HTTP: each request a POST, answered with one JSON body or
//! with an SSE stream whose events end with the answer; the session the upstream names in
//! `Mcp-Session-Id`, made again when the upstream forgets it (`404`).
//!
//! Every body is read under the upstream's `max_message`, a JSON body and a whole event
//! stream alike, so a hostile upstream costs at most that much memory per call. The
//! upstream's own requests on a stream are answered (`ping`) or refused with a POST of the
//! answer; its notifications are read and dropped.

use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use futures_util::StreamExt;
use reqwest::{
    Client, StatusCode, Url,
    header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue},
    redirect,
};
use serde_json::{Value, json};

use super::{
    link_error::LinkError,
    rpc::{self, ProgressRoute},
    sse::{self, Bound},
};

const SESSION_ID: &str = "mcp-session-id";
const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";

/// How long a connection to the upstream may take to open, and a session to be made.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest `Retry-After` believed: an upstream cannot park calls for a day.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// The most sessions kept, one per credential the calls were sent with (callers' tokens);
/// past it one is forgotten to make room.
const MAX_SESSIONS: usize = 1024;

/// Which session a call goes on: the configured credential's (`None`), or the SHA-256 of
/// the token it carries, so that no two callers share a session and no token is kept as
/// a key.
type SessionKey = Option<[u8; 32]>;

pub(crate) struct HttpLink {
    client: Client,
    url: Url,
    headers: HeaderMap,
    max_message: usize,
    next: AtomicU64,
    /// The sessions made, looked up without waiting (a std mutex held for a look-up).
    sessions: std::sync::Mutex<HashMap<SessionKey, Arc<Session>>>,
    /// Held while a session is made, so that two calls do not make the same one; a call
    /// whose session exists never waits for it.
    making: tokio::sync::Mutex<()>,
    /// Told when an answer's event stream says the upstream's tools changed
    /// (`refresh.rs` lists them again).
    tools_changed: Arc<tokio::sync::Notify>,
    /// Counts the configured credential's sessions made and forgotten: the GET stream
    /// (`get_stream.rs`) follows the session it names.
    configured: tokio::sync::watch::Sender<u64>,
}

/// What `initialize` gave: the session's id (none from a stateless server), the revision
/// to name in each request, and the result itself; and the `Authorization` of its calls
/// when it is a caller's (the configured one otherwise).
pub(super) struct Session {
    pub(super) id: Option<HeaderValue>,
    version: HeaderValue,
    pub(super) init: Value,
    authorization: Option<HeaderValue>,
}

/// A POST's failure, or the upstream no longer knowing the session.
enum Posted {
    Answer(Result<Value, LinkError>),
    SessionGone,
}

impl HttpLink {
    pub(crate) fn new(
        url: &str,
        headers: &[(String, String)],
        bearer: Option<&str>,
        max_message: usize,
        tools_changed: Arc<tokio::sync::Notify>,
    ) -> Result<Self, String> {
        let url =
            Url::parse(url).map_err(|error| format!("the URL `{url}` is invalid: {error}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("the URL `{url}` is not http or https"));
        }
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let name = HeaderName::try_from(name.as_str())
                .map_err(|error| format!("the header name `{name}` is invalid: {error}"))?;
            let mut value = HeaderValue::try_from(value.as_str())
                .map_err(|error| format!("the value of header `{name}` is invalid: {error}"))?;
            value.set_sensitive(true);
            map.append(name, value);
        }
        if let Some(token) = bearer {
            let mut value = HeaderValue::try_from(format!("Bearer {token}"))
                .map_err(|_| "the bearer token holds characters a header cannot".to_owned())?;
            value.set_sensitive(true);
            map.insert(AUTHORIZATION, value);
        }
        let tls = crate::tls::client_config()?;
        let client = Client::builder()
            .tls_backend_preconfigured(tls)
            .connect_timeout(CONNECT_TIMEOUT)
            // A redirected POST would carry the credentials somewhere else.
            .redirect(redirect::Policy::none())
            .user_agent(concat!("fusion-gateway/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|error| format!("cannot build the HTTP client: {error}"))?;
        Ok(Self {
            client,
            url,
            headers: map,
            max_message,
            next: AtomicU64::new(1),
            sessions: std::sync::Mutex::new(HashMap::new()),
            making: tokio::sync::Mutex::new(()),
            tools_changed,
            configured: tokio::sync::watch::Sender::new(0),
        })
    }

    pub(crate) async fn connect(&self) -> Result<Value, LinkError> {
        Ok(self.session(None).await?.init.clone())
    }

    /// One request, sent with `token` as its bearer credential (`None`: the configured one).
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Value,
        token: Option<&str>,
        progress: Option<&ProgressRoute>,
    ) -> Result<Value, LinkError> {
        let session = self.session(token).await?;
        match self.post(&session, method, &params, progress).await {
            Posted::Answer(answer) => answer,
            // The upstream did not know the session, so it did not act on the request:
            // sending it once more, on a new session, cannot repeat an effect.
            Posted::SessionGone => {
                self.forget(&session);
                let session = self.session(token).await?;
                match self.post(&session, method, &params, progress).await {
                    Posted::Answer(answer) => answer,
                    Posted::SessionGone => Err(LinkError::NotSent(
                        "the upstream forgot a session it had just made".to_owned(),
                    )),
                }
            }
        }
    }

    fn forget(&self, gone: &Arc<Session>) {
        let mut configured = false;
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.retain(|key, session| {
                let keep = !Arc::ptr_eq(session, gone);
                configured |= !keep && key.is_none();
                keep
            });
        }
        if configured {
            self.configured.send_modify(|count| *count += 1);
        }
    }

    /// The configured credential's session, if one is made.
    pub(super) fn configured_session(&self) -> Option<Arc<Session>> {
        self.made(&None)
    }

    /// Told each time the configured credential's session is made or forgotten.
    pub(super) fn session_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.configured.subscribe()
    }

    pub(super) fn max_message(&self) -> usize {
        self.max_message
    }

    pub(super) fn tools_changed(&self) -> &tokio::sync::Notify {
        &self.tools_changed
    }

    /// Opens `session`'s GET stream (`get_stream.rs`): the configured headers, the session
    /// and its revision, as every request of the session carries them.
    pub(super) async fn open_stream(
        &self,
        session: &Session,
    ) -> Result<reqwest::Response, LinkError> {
        let mut request = self
            .client
            .get(self.url.clone())
            .headers(self.headers_with(session.authorization.as_ref()))
            .header(ACCEPT, "text/event-stream")
            .header(PROTOCOL_VERSION_HEADER, session.version.clone());
        if let Some(id) = &session.id {
            request = request.header(SESSION_ID, id.clone());
        }
        request
            .send()
            .await
            .map_err(|error| LinkError::NotSent(crate::tls::without_url(&error)))
    }

    fn made(&self, key: &SessionKey) -> Option<Arc<Session>> {
        self.sessions.lock().ok()?.get(key).cloned()
    }

    /// The session of calls sent with `token`, made with `initialize` if there is none.
    async fn session(&self, token: Option<&str>) -> Result<Arc<Session>, LinkError> {
        let key: SessionKey = token.map(|token| {
            use sha2::Digest as _;
            sha2::Sha256::digest(token.as_bytes()).into()
        });
        let authorization = match token {
            Some(token) => {
                let mut value = HeaderValue::try_from(format!("Bearer {token}")).map_err(|_| {
                    LinkError::NotSent(
                        "the caller's token holds characters a header cannot".to_owned(),
                    )
                })?;
                value.set_sensitive(true);
                Some(value)
            }
            None => None,
        };
        if let Some(session) = self.made(&key) {
            return Ok(session);
        }
        let _making = self.making.lock().await;
        if let Some(session) = self.made(&key) {
            return Ok(session);
        }
        let made = tokio::time::timeout(CONNECT_TIMEOUT, self.initialize(authorization))
            .await
            .unwrap_or_else(|_| {
                Err(LinkError::NotSent(format!(
                    "no session within {CONNECT_TIMEOUT:?}"
                )))
            })?;
        let session = Arc::new(made);
        if let Ok(mut sessions) = self.sessions.lock() {
            if sessions.len() >= MAX_SESSIONS
                && let Some(old) = sessions.keys().find(|old| old.is_some()).copied()
            {
                sessions.remove(&old);
            }
            sessions.insert(key, Arc::clone(&session));
        }
        if key.is_none() {
            self.configured.send_modify(|count| *count += 1);
        }
        Ok(session)
    }

    async fn initialize(&self, authorization: Option<HeaderValue>) -> Result<Session, LinkError> {
        // Only `initialize` goes out here: whatever fails, no call reached the upstream.
        let not_sent = |error: LinkError| match error {
            LinkError::NotSent(why) => LinkError::NotSent(why),
            other => LinkError::NotSent(format!("`initialize` failed: {other}")),
        };
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let body = rpc::request(id, "initialize", &rpc::initialize_params());
        let response = self
            .send(None, None, authorization.as_ref(), body)
            .await
            .map_err(not_sent)?;
        let session_id = response.headers().get(SESSION_ID).cloned();
        let init = match self.answer(response, id, None, None).await {
            Posted::Answer(answer) => answer.map_err(not_sent)?,
            Posted::SessionGone => {
                return Err(LinkError::NotSent(
                    "`initialize` was answered 404".to_owned(),
                ));
            }
        };
        let version = init
            .get("protocolVersion")
            .and_then(Value::as_str)
            .and_then(|version| HeaderValue::try_from(version).ok())
            .unwrap_or(HeaderValue::from_static(rpc::PROTOCOL_VERSION));
        let session = Session {
            id: session_id,
            version,
            init,
            authorization,
        };
        let initialized = rpc::notification("notifications/initialized", &json!({}));
        let response = self
            .send(
                session.id.as_ref(),
                Some(&session.version),
                session.authorization.as_ref(),
                initialized,
            )
            .await
            .map_err(not_sent)?;
        if !response.status().is_success() {
            return Err(LinkError::NotSent(format!(
                "`notifications/initialized` was answered {}",
                response.status()
            )));
        }
        Ok(session)
    }

    async fn post(
        &self,
        session: &Arc<Session>,
        method: &str,
        params: &Value,
        progress: Option<&ProgressRoute>,
    ) -> Posted {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let body = rpc::request(id, method, params);
        let mut withdraw = Withdraw {
            link: self,
            session,
            id,
            armed: true,
        };
        let posted = match self
            .send(
                session.id.as_ref(),
                Some(&session.version),
                session.authorization.as_ref(),
                body,
            )
            .await
        {
            Ok(response) => self.answer(response, id, Some(session), progress).await,
            Err(error) => Posted::Answer(Err(error)),
        };
        withdraw.armed = false;
        posted
    }

    async fn send(
        &self,
        session: Option<&HeaderValue>,
        version: Option<&HeaderValue>,
        authorization: Option<&HeaderValue>,
        body: Vec<u8>,
    ) -> Result<reqwest::Response, LinkError> {
        let mut request = self
            .client
            .post(self.url.clone())
            .headers(self.headers_with(authorization))
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .body(body);
        if let Some(session) = session {
            request = request.header(SESSION_ID, session);
        }
        if let Some(version) = version {
            request = request.header(PROTOCOL_VERSION_HEADER, version);
        }
        request.send().await.map_err(|error| {
            let why = crate::tls::without_url(&error);
            if error.is_connect() {
                LinkError::NotSent(format!("cannot connect: {why}"))
            } else {
                LinkError::Lost(why)
            }
        })
    }

    /// The configured headers, with a caller's `Authorization` in place of the configured
    /// one when the call is sent as that caller.
    fn headers_with(&self, authorization: Option<&HeaderValue>) -> HeaderMap {
        let mut headers = self.headers.clone();
        if let Some(authorization) = authorization {
            headers.insert(AUTHORIZATION, authorization.clone());
        }
        headers
    }

    /// The answer to request `id` in `response`.
    async fn answer(
        &self,
        response: reqwest::Response,
        id: u64,
        session: Option<&Session>,
        progress: Option<&ProgressRoute>,
    ) -> Posted {
        let status = response.status();
        if status == StatusCode::NOT_FOUND && session.is_some_and(|session| session.id.is_some()) {
            return Posted::SessionGone;
        }
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.trim().parse::<u64>().ok())
                .map(|seconds| Duration::from_secs(seconds).min(MAX_RETRY_AFTER));
            return Posted::Answer(Err(LinkError::Status {
                status: status.as_u16(),
                retry_after,
            }));
        }
        if response
            .content_length()
            .is_some_and(|length| length > self.max_message as u64)
        {
            return Posted::Answer(Err(LinkError::TooLarge {
                limit: self.max_message,
            }));
        }
        let is_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"));
        Posted::Answer(if is_stream {
            self.stream_answer(response, id, session, progress).await
        } else {
            self.json_answer(response, id).await
        })
    }

    async fn json_answer(
        &self,
        mut response: reqwest::Response,
        id: u64,
    ) -> Result<Value, LinkError> {
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(lost)? {
            if body.len() + chunk.len() > self.max_message {
                return Err(LinkError::TooLarge {
                    limit: self.max_message,
                });
            }
            body.extend_from_slice(&chunk);
        }
        match rpc::read(&body) {
            rpc::Incoming::Answer {
                id: answered,
                outcome,
            } if answered == id => outcome,
            rpc::Incoming::Answer { id: answered, .. } => Err(LinkError::Garbage(format!(
                "the answer to request {id} carries id {answered}"
            ))),
            rpc::Incoming::Unreadable(why) => Err(LinkError::Garbage(why)),
            _ => Err(LinkError::Garbage(
                "the answer to a request is not a JSON-RPC answer".to_owned(),
            )),
        }
    }

    async fn stream_answer(
        &self,
        response: reqwest::Response,
        id: u64,
        session: Option<&Session>,
        progress: Option<&ProgressRoute>,
    ) -> Result<Value, LinkError> {
        let mut events = std::pin::pin!(sse::events(response, self.max_message, Bound::Whole));
        while let Some(data) = events.next().await {
            let data = data?;
            match rpc::read(data.as_bytes()) {
                rpc::Incoming::Answer {
                    id: answered,
                    outcome,
                } if answered == id => return outcome,
                rpc::Incoming::Request { id: asked, method } => {
                    self.reply(session, rpc::answer_to(&asked, &method)).await;
                }
                rpc::Incoming::Progress {
                    token,
                    progress: made,
                } => {
                    if let Some(route) = progress.filter(|route| route.token == token) {
                        let _ = route.sender.try_send(made);
                    }
                }
                // One stored permit however many come: a flood costs one more listing.
                rpc::Incoming::Notification { method } if method == rpc::TOOLS_CHANGED => {
                    self.tools_changed.notify_one();
                }
                _ => {}
            }
        }
        Err(LinkError::Lost(
            "the event stream ended before the answer".to_owned(),
        ))
    }

    /// Posts the answer to one of the upstream's requests; its fate does not matter to the
    /// call (the upstream's request then waits for its own timeout).
    pub(super) async fn reply(&self, session: Option<&Session>, answer: Vec<u8>) {
        let sent = self
            .send(
                session.and_then(|session| session.id.as_ref()),
                session.map(|session| &session.version),
                session.and_then(|session| session.authorization.as_ref()),
                answer,
            )
            .await;
        if let Err(error) = sent {
            tracing::debug!(target: "fusion::upstream", %error, "an answer to the upstream's request was not delivered");
        }
    }
}

/// A POST whose caller stopped waiting: the upstream is told with `notifications/cancelled`
/// (its connection is dropped too, which a server may or may not read as a cancel).
struct Withdraw<'a> {
    link: &'a HttpLink,
    session: &'a Arc<Session>,
    id: u64,
    armed: bool,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let cancelled = rpc::notification(
            "notifications/cancelled",
            &json!({"requestId": self.id, "reason": "the gateway's caller stopped waiting"}),
        );
        let request = self
            .link
            .client
            .post(self.link.url.clone())
            .headers(self.link.headers_with(self.session.authorization.as_ref()))
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .header(PROTOCOL_VERSION_HEADER, self.session.version.clone())
            .timeout(CONNECT_TIMEOUT)
            .body(cancelled);
        let request = match &self.session.id {
            Some(id) => request.header(SESSION_ID, id.clone()),
            None => request,
        };
        runtime.spawn(async move {
            let _ = request.send().await;
        });
    }
}

fn lost(error: reqwest::Error) -> LinkError {
    LinkError::Lost(crate::tls::without_url(&error))
}
