//! [`Call`]: the handle a tool holds on the request it serves (progress, client logging,
//! cancellation, its peer), and [`LogLevel`].

use std::sync::{
    Arc, Mutex,
    atomic::{AtomicBool, AtomicU64, Ordering},
};

use rmcp::{
    Peer, RoleServer,
    model::{Notification, ProgressNotificationParam, ProgressToken, ServerNotification},
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::client::{CallStream, Link};
use crate::{
    identity::RequestInfo, inject::watch::Watch, rounds::questions::InputState,
    validate::NumberLiterals,
};

/// The HTTP header a host or gateway names a request's idempotency key with (the IETF
/// draft `Idempotency-Key`).
const IDEMPOTENCY_KEY_HEADER: &str = "idempotency-key";

/// The request a tool is serving. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Call {
    pub(super) inner: Arc<Inner>,
}

#[derive(Debug)]
pub(super) struct Inner {
    request_id: Option<String>,
    progress_token: Option<ProgressToken>,
    peer: Option<Peer<RoleServer>>,
    cancel: CancellationToken,
    /// The least severe level the client asked to receive (`logging/setLevel`); `None`
    /// sends nothing, as the client did not ask.
    log_level: Option<LogLevel>,
    /// The call's own stream to its client, when the transport serving it keeps one
    /// (`client.rs`): its messages go there instead of through `peer`.
    stream: Option<Arc<dyn CallStream>>,
    /// In the tester: the notifications the tool sent, as they would go on the wire.
    recorded: Option<Mutex<Vec<Value>>>,
    /// The number literals of the arguments that a JSON value cannot hold exactly, as the
    /// transport recorded them: the validator judges integers sent as floats by them.
    numbers: NumberLiterals,
    /// Who is calling, as the transport knows them.
    request: RequestInfo,
    /// How questions to the client are answered when the call cannot send the client a
    /// request (2026-07-28 rounds, tasks): `None` asks through `peer`.
    pub(super) input: Option<Arc<InputState>>,
    /// The W3C trace context the request carried in `params._meta` (`traceparent`, and
    /// `tracestate` if any): the parent of the call's span (feature `otel`).
    #[cfg(feature = "otel")]
    trace_context: Option<Box<(String, Option<String>)>>,
    /// In the tester: its faults for the tool, and where the call's log event goes.
    /// `None` for every call a transport serves.
    watch: Option<Watch>,
    /// The fencing token of the call's idempotency claim, once claimed (0: none).
    key_fence: AtomicU64,
    /// The fencing token of the task lease the call runs under, set by the task's runner
    /// once the store granted it (0: none yet); `None` for a call that is not a task.
    task_fence: Option<Arc<AtomicU64>>,
    /// Whether the handler started: a call dropped after that may have done part of its
    /// work (an idempotency claim then ends as stopped, not released).
    handler_started: AtomicBool,
    /// The idempotency key the request carried in `params._meta`
    /// ([`IDEMPOTENCY_KEY_META_KEY`](crate::meta::IDEMPOTENCY_KEY_META_KEY)).
    request_key: Option<Box<str>>,
    /// The last progress sent, and when: what a heartbeat repeats (`pipeline/heartbeat.rs`).
    beat: Mutex<crate::call::progress::LastProgress>,
}

impl Call {
    /// A call served to a connected client.
    pub(crate) fn connected(
        request_id: String,
        progress_token: Option<ProgressToken>,
        peer: Peer<RoleServer>,
        cancel: CancellationToken,
        log_level: Option<LogLevel>,
        numbers: NumberLiterals,
        request: RequestInfo,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                request_id: Some(request_id),
                progress_token,
                peer: Some(peer),
                cancel,
                log_level,
                stream: None,
                recorded: None,
                numbers,
                request,
                input: None,
                #[cfg(feature = "otel")]
                trace_context: None,
                watch: None,
                key_fence: AtomicU64::new(0),
                task_fence: None,
                handler_started: AtomicBool::new(false),
                request_key: None,
                beat: Mutex::default(),
            }),
        }
    }

    /// The trace context of the request, from its `params._meta`: its span's parent. Only
    /// on a call just made (its `Arc` not shared yet).
    #[cfg_attr(not(feature = "otel"), allow(unused_mut, unused_variables))]
    pub(crate) fn with_trace_context(mut self, meta: &rmcp::model::RequestMetaObject) -> Self {
        #[cfg(feature = "otel")]
        {
            let text = |key: &str| meta.get(key).and_then(Value::as_str).map(str::to_owned);
            if let (Some(parent), Some(inner)) =
                (text("traceparent"), Arc::get_mut(&mut self.inner))
            {
                inner.trace_context = Some(Box::new((parent, text("tracestate"))));
            }
        }
        self
    }

    /// The idempotency key the request carried in `params._meta`, under
    /// [`IDEMPOTENCY_KEY_META_KEY`](crate::meta::IDEMPOTENCY_KEY_META_KEY) (a non-empty
    /// string). Only on a call just made (its `Arc` not shared yet).
    pub(crate) fn with_request_key(mut self, meta: &rmcp::model::RequestMetaObject) -> Self {
        if let Some(key) = meta
            .get(crate::meta::IDEMPOTENCY_KEY_META_KEY)
            .and_then(Value::as_str)
            .filter(|key| !key.is_empty())
            && let Some(inner) = Arc::get_mut(&mut self.inner)
        {
            inner.request_key = Some(key.into());
        }
        self
    }

    /// The idempotency key of the request itself, for a tool whose arguments carry none:
    /// from `params._meta`, else from an HTTP request's `Idempotency-Key` header (what a
    /// host or gateway sets).
    pub(crate) fn request_key(&self) -> Option<&str> {
        self.inner.request_key.as_deref().or_else(|| {
            self.inner
                .request
                .header(IDEMPOTENCY_KEY_HEADER)
                .filter(|key| !key.is_empty())
        })
    }

    /// The `traceparent` (and `tracestate`) the request carried in `params._meta`.
    #[cfg(feature = "otel")]
    pub(crate) fn trace_context(&self) -> Option<(&str, Option<&str>)> {
        self.inner
            .trace_context
            .as_deref()
            .map(|(parent, state)| (parent.as_str(), state.as_deref()))
    }

    /// This call's questions to the client go through `input` (rounds or a task) instead
    /// of requests on the peer. Only on a call just made (its `Arc` not shared yet).
    pub(crate) fn with_input(mut self, input: Arc<InputState>) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.input = Some(input);
        }
        self
    }

    /// This call's messages to its client go on `stream`, the call's own (`client.rs`).
    /// Only on a call just made (its `Arc` not shared yet).
    pub(crate) fn with_stream(mut self, stream: Arc<dyn CallStream>) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.stream = Some(stream);
        }
        self
    }

    /// The road of this call's messages to its client: its own stream, else rmcp's peer;
    /// `None` when it has no client (the tester, a task taken over).
    pub(super) fn link(&self) -> Option<Link<'_>> {
        match (&self.inner.stream, &self.inner.peer) {
            (Some(stream), _) => Some(Link::Stream(stream.as_ref())),
            (None, Some(peer)) => Some(Link::Peer(peer)),
            (None, None) => None,
        }
    }

    /// This call runs as a task: its fencing token is the task lease's, in `fence` (set by
    /// the task's runner). Only on a call just made (its `Arc` not shared yet).
    pub(crate) fn with_task_fence(mut self, fence: Arc<AtomicU64>) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.task_fence = Some(fence);
        }
        self
    }

    /// The call holds the claim of its idempotency key with `fence`.
    pub(crate) fn set_key_fence(&self, fence: u64) {
        self.inner.key_fence.store(fence, Ordering::Release);
    }

    /// Marks the handler started (`pipeline/invoke.rs`).
    pub(crate) fn mark_handler_started(&self) {
        self.inner.handler_started.store(true, Ordering::Release);
    }

    /// Whether the handler started, for the guard of the call's idempotency claim.
    pub(crate) fn handler_started(&self) -> &AtomicBool {
        &self.inner.handler_started
    }

    /// The fencing token of what this call holds: its idempotency key's claim, else the
    /// lease of the task it runs as; `None` for a call that holds neither. The store
    /// hands out a larger number with each new claim of the key or lease of the task, so
    /// a handler that writes to its own database can make the write conditional on it:
    /// a runner that was paused past its lease, while another replica took its work
    /// over, wakes up with an older token and is refused there.
    ///
    /// ```
    /// use fusion_runtime::{Call, prelude::*};
    ///
    /// /// Record a payment once per `payment_id`.
    /// #[mcp_tool(idempotent, idempotency_key = "payment_id")]
    /// async fn record_payment(#[call] call: &Call, payment_id: String) -> String {
    ///     // e.g. `UPDATE payments SET .., fence = ?1 WHERE id = ?2 AND fence < ?1`
    ///     let fence = call.fencing_token().unwrap_or(0);
    ///     format!("{payment_id} written under fence {fence}")
    /// }
    /// # let _ = Server::builder("pay", "0").tool(record_payment).build();
    /// ```
    pub fn fencing_token(&self) -> Option<u64> {
        match self.inner.key_fence.load(Ordering::Acquire) {
            0 => self
                .inner
                .task_fence
                .as_ref()
                .map(|fence| fence.load(Ordering::Acquire))
                .filter(|fence| *fence != 0),
            fence => Some(fence),
        }
    }

    /// The call of a task taken over from a replica that stopped: no client connection
    /// (questions go through `input`), the caller as the task recorded it.
    pub(crate) fn resumed(
        cancel: CancellationToken,
        request: RequestInfo,
        input: Arc<InputState>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                request_id: None,
                progress_token: None,
                peer: None,
                cancel,
                log_level: None,
                stream: None,
                recorded: None,
                numbers: NumberLiterals::default(),
                request,
                input: Some(input),
                #[cfg(feature = "otel")]
                trace_context: None,
                watch: None,
                key_fence: AtomicU64::new(0),
                task_fence: None,
                handler_started: AtomicBool::new(false),
                request_key: None,
                beat: Mutex::default(),
            }),
        }
    }

    /// A call without a client (the in-memory tester): notifications are recorded, not
    /// sent; every log level is recorded and a progress token is assumed.
    pub fn detached() -> Self {
        Self::detached_as(NumberLiterals::default(), RequestInfo::in_memory())
    }

    /// A detached call from `request`'s caller, whose arguments came as JSON text with
    /// these number literals ([`Tester::call_json`](crate::testing::Tester::call_json),
    /// [`Tester::as_caller`](crate::testing::Tester::as_caller)).
    pub(crate) fn detached_as(numbers: NumberLiterals, request: RequestInfo) -> Self {
        Self {
            inner: Arc::new(Inner {
                request_id: None,
                progress_token: Some(ProgressToken(rmcp::model::NumberOrString::String(
                    "test".into(),
                ))),
                peer: None,
                cancel: CancellationToken::new(),
                log_level: Some(LogLevel::Debug),
                stream: None,
                recorded: Some(Mutex::new(Vec::new())),
                numbers,
                request,
                input: None,
                #[cfg(feature = "otel")]
                trace_context: None,
                watch: None,
                key_fence: AtomicU64::new(0),
                task_fence: None,
                handler_started: AtomicBool::new(false),
                request_key: None,
                beat: Mutex::default(),
            }),
        }
    }

    /// A detached call of the tester's, watched by it: faults injected in place of the
    /// handler, the call log's event recorded ([`Tester`](crate::testing::Tester)).
    pub(crate) fn watched(numbers: NumberLiterals, request: RequestInfo, watch: Watch) -> Self {
        let mut call = Self::detached_as(numbers, request);
        if let Some(inner) = Arc::get_mut(&mut call.inner) {
            inner.watch = Some(watch);
        }
        call
    }

    /// The tester watching this call, if a tester made it.
    pub(crate) fn watch(&self) -> Option<&Watch> {
        self.inner.watch.as_ref()
    }

    /// Cancels the call, as the client's `notifications/cancelled` does (the tester's
    /// [`CallHandle::cancel`](crate::testing::CallHandle::cancel)).
    pub(crate) fn cancel(&self) {
        self.inner.cancel.cancel();
    }

    /// The call a cached tool's shared run makes for the handler (`pipeline/cache.rs`):
    /// the same caller, transport and log level, but its own cancellation (the run goes on
    /// when this call is cancelled, for the identical calls that joined it) and no progress
    /// token (its progress is no one caller's).
    pub(crate) fn for_shared_run(&self) -> Self {
        let inner = &self.inner;
        Self {
            inner: Arc::new(Inner {
                request_id: inner.request_id.clone(),
                progress_token: None,
                peer: inner.peer.clone(),
                cancel: CancellationToken::new(),
                log_level: inner.log_level,
                stream: inner.stream.clone(),
                recorded: None,
                numbers: inner.numbers.clone(),
                request: inner.request.clone(),
                input: None,
                #[cfg(feature = "otel")]
                trace_context: None,
                watch: inner.watch.as_ref().map(Watch::for_shared_run),
                key_fence: AtomicU64::new(inner.key_fence.load(Ordering::Acquire)),
                task_fence: inner.task_fence.clone(),
                handler_started: AtomicBool::new(false),
                request_key: None,
                beat: Mutex::default(),
            }),
        }
    }

    /// The number literals the transport recorded for the arguments.
    pub(crate) fn number_literals(&self) -> &NumberLiterals {
        &self.inner.numbers
    }

    /// Whether the client asked for progress (its request carried a progress token).
    pub(crate) fn wants_progress(&self) -> bool {
        self.inner.progress_token.is_some()
    }

    /// The last progress the call sent (`pipeline/heartbeat.rs`).
    pub(crate) fn last_progress(&self) -> &Mutex<crate::call::progress::LastProgress> {
        &self.inner.beat
    }

    /// Whether the call came over a transport (not from the in-memory tester).
    pub(crate) fn is_served(&self) -> bool {
        self.inner.peer.is_some()
    }

    /// Who is calling: the transport, the HTTP headers and extensions, the session, the
    /// verified token's claims ([`RequestInfo`]).
    ///
    /// ```
    /// use fusion_runtime::{Call, prelude::*};
    ///
    /// /// Who am I?
    /// #[mcp_tool]
    /// async fn whoami(#[call] call: &Call) -> String {
    ///     call.request().subject().unwrap_or("anonymous").to_owned()
    /// }
    /// # let _ = Server::builder("who", "0").tool(whoami).build();
    /// ```
    pub fn request(&self) -> &RequestInfo {
        &self.inner.request
    }

    /// The JSON-RPC id of the request, when served over a transport.
    pub fn request_id(&self) -> Option<&str> {
        self.inner.request_id.as_deref()
    }

    /// Whether the client cancelled the request (`notifications/cancelled`). The
    /// runtime also drops the handler's future on cancellation; checking lets a long loop
    /// stop cleanly between steps.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// Resolves when the client cancels the request.
    pub async fn cancelled(&self) {
        self.inner.cancel.cancelled().await;
    }

    /// The call's cancellation, for the pipeline's combinators: its future
    /// ([`CancellationToken::cancelled`]) is a named type a struct can hold.
    pub(crate) fn cancellation(&self) -> &CancellationToken {
        &self.inner.cancel
    }

    /// Reports progress (`notifications/progress`) when the client asked for it with a
    /// progress token; does nothing otherwise. A client that went away is not an error
    /// for the tool.
    pub async fn progress(&self, done: f64, total: Option<f64>, message: Option<String>) {
        let Some(token) = self.inner.progress_token.clone() else {
            return;
        };
        let mut param = ProgressNotificationParam::new(token, done);
        if let Some(total) = total {
            param = param.with_total(total);
        }
        if let Some(message) = message {
            param = param.with_message(message);
        }
        crate::call::progress::sent(&self.inner.beat, done, total);
        if let Some(recorded) = &self.inner.recorded {
            record(recorded, "notifications/progress", &param);
        }
        if let Some(link) = self.link()
            && let Err(error) = link
                .notify(ServerNotification::ProgressNotification(Notification::new(
                    param,
                )))
                .await
        {
            tracing::debug!(target: "fusion::call", %error, "progress notification not delivered");
        }
    }

    /// Sends a log message to the client (`notifications/message`) if it asked for this
    /// level or a less severe one with `logging/setLevel`.
    pub async fn log(&self, level: LogLevel, data: impl Into<Value>) {
        let Some(threshold) = self.inner.log_level else {
            return;
        };
        if level < threshold {
            return;
        }
        let data = data.into();
        if let Some(recorded) = &self.inner.recorded {
            let params = serde_json::json!({"level": level.as_str(), "data": data.clone()});
            record(recorded, "notifications/message", &params);
        }
        if let Some(link) = self.link() {
            // Logging is deprecated by the 2026-07-28 protocol (SEP-2577) but clients of
            // the earlier versions, and the conformance suite, still use it.
            #[allow(deprecated)]
            let message = ServerNotification::LoggingMessageNotification(Notification::new(
                rmcp::model::LoggingMessageNotificationParam::new(level.to_rmcp(), data),
            ));
            if let Err(error) = link.notify(message).await {
                tracing::debug!(target: "fusion::call", %error, "log notification not delivered");
            }
        }
    }

    /// rmcp's handle on the client, for requests beyond progress and logging (sampling
    /// with `create_message`, elicitation). `None` in the tester.
    pub fn peer(&self) -> Option<&Peer<RoleServer>> {
        self.inner.peer.as_ref()
    }

    /// The notifications recorded by a detached call (the tester's), in order.
    pub fn recorded(&self) -> Vec<Value> {
        self.inner
            .recorded
            .as_ref()
            .and_then(|recorded| recorded.lock().ok().map(|list| list.clone()))
            .unwrap_or_default()
    }
}

fn record(recorded: &Mutex<Vec<Value>>, method: &str, params: &impl serde::Serialize) {
    if let (Ok(mut list), Ok(params)) = (recorded.lock(), serde_json::to_value(params)) {
        list.push(serde_json::json!({"method": method, "params": params}));
    }
}

/// The severity of a log message to the client (RFC 5424), least severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Details for debugging.
    Debug,
    /// Normal progress.
    Info,
    /// Normal but significant.
    Notice,
    /// Something may be wrong.
    Warning,
    /// Something failed.
    Error,
    /// A component failed.
    Critical,
    /// Act now.
    Alert,
    /// The system is unusable.
    Emergency,
}

// rmcp marks its logging types deprecated (SEP-2577 drops logging from the 2026-07-28
// protocol); the conversions live here, behind one `allow`.
#[allow(deprecated)]
impl LogLevel {
    /// The level's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }

    fn to_rmcp(self) -> rmcp::model::LoggingLevel {
        use rmcp::model::LoggingLevel as Rmcp;
        match self {
            Self::Debug => Rmcp::Debug,
            Self::Info => Rmcp::Info,
            Self::Notice => Rmcp::Notice,
            Self::Warning => Rmcp::Warning,
            Self::Error => Rmcp::Error,
            Self::Critical => Rmcp::Critical,
            Self::Alert => Rmcp::Alert,
            Self::Emergency => Rmcp::Emergency,
        }
    }

    /// The level a client sent with `logging/setLevel`.
    pub(crate) fn from_rmcp(level: rmcp::model::LoggingLevel) -> Self {
        use rmcp::model::LoggingLevel as Rmcp;
        match level {
            Rmcp::Debug => Self::Debug,
            Rmcp::Info => Self::Info,
            Rmcp::Notice => Self::Notice,
            Rmcp::Warning => Self::Warning,
            Rmcp::Error => Self::Error,
            Rmcp::Critical => Self::Critical,
            Rmcp::Alert => Self::Alert,
            Rmcp::Emergency => Self::Emergency,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_detached_call_records_what_it_would_send() {
        let call = Call::detached();
        call.progress(1.0, Some(2.0), Some("half".into())).await;
        call.log(LogLevel::Info, "hello").await;
        let recorded = call.recorded();
        assert_eq!(recorded.len(), 2);
        assert_eq!(recorded[0]["method"], "notifications/progress");
        assert_eq!(recorded[0]["params"]["total"], 2.0);
        assert_eq!(recorded[1]["params"]["data"], "hello");
    }
}
