//! An upstream's tools as this server's tool definitions: listed under the prefix, called
//! through the link (their answers made outcomes in `outcome.rs`), refused once the upstream
//! no longer offers them as they were registered, and one breaker for the whole upstream.

use std::{
    sync::{
        Arc, Mutex, RwLock,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use serde_json::{Map, Value, json};

use super::{
    Upstream,
    link::Link,
    listing::{FIRST_RETRY, until_listed},
    offered::{Names, Offered, OfferedTool, same_treatment},
    rpc::{self, ProgressRoute},
};
use crate::{
    call::Call,
    failure::{Classification, ErrorClass, Failure, FailureKind},
    future::BoxFuture,
    policy::{Admission, Circuit, CircuitPolicy, Transition},
    setup::mounts::{ListedNow, ToolsChanged},
    tool::{Annotations, Invoke, Outcome, ToolDefinition, ToolSpec},
    validate::{ArgIssue, Validator},
};

/// One mounted upstream: its link, its breaker, and the tools it offers.
pub(crate) struct Mount {
    pub(crate) prefix: String,
    pub(crate) link: Link,
    circuit: Option<Circuit>,
    /// How long the breaker stays open before a probe.
    cooldown: Duration,
    /// Whether a task pings the upstream until it is up (one at most).
    probing: AtomicBool,
    /// Whether it has answered a listing: an upstream not reached at start is down
    /// (`/readyz` says so) until it does.
    reached: AtomicBool,
    /// Until then, how long until it is tried again, in milliseconds (the calls of its
    /// tools say it).
    retry_in: AtomicU64,
    /// Who the upstream is told calls.
    identity: super::identity::Identity,
    /// Told when the upstream goes down or comes back, or its tools change.
    pub(crate) changed: Arc<ToolsChanged>,
    /// What it offered at start: the tools registered in the registry.
    at_start: Offered,
    /// What it offers now (`refresh.rs` replaces it), and whether that differs from
    /// `at_start`. Read by a listing, and by each call of its tools; written by a refresh.
    now: RwLock<Arc<Now>>,
    /// The names its tools were ever listed under, each leaked once.
    pub(crate) names: Mutex<Names>,
    /// Told when the upstream sends `notifications/tools/list_changed`.
    pub(crate) tools_changed: Arc<tokio::sync::Notify>,
}

/// What an upstream offers now.
#[derive(Default)]
pub(crate) struct Now {
    pub(crate) offered: Offered,
    /// Whether a tool of `at_start` is gone or described otherwise, or a tool was added.
    pub(crate) changed_since_start: bool,
}

impl crate::setup::mounts::MountHealth for Mount {
    fn is_down(&self) -> bool {
        !self.reached.load(Ordering::Acquire)
            || self
                .circuit
                .as_ref()
                .is_some_and(|circuit| !circuit.is_closed())
    }

    fn owns(&self, name: &str) -> bool {
        self.at_start.tools.contains_key(name) || self.now().offered.tools.contains_key(name)
    }

    fn has_changed(&self) -> bool {
        self.now().changed_since_start
    }

    fn listed_now(&self, name: &str) -> ListedNow {
        let now = self.now();
        let (Some(then), Some(offered)) =
            (self.at_start.tools.get(name), now.offered.tools.get(name))
        else {
            // Added since start: listed from `AddedTools`, as long as it is offered.
            return if now.offered.tools.contains_key(name) {
                ListedNow::AsBuilt
            } else {
                ListedNow::Not
            };
        };
        if offered == then {
            ListedNow::AsBuilt
        } else if same_treatment(then.hints(), offered.hints()) {
            ListedNow::As(Box::new(offered.wire.clone()))
        } else {
            ListedNow::Not
        }
    }

    fn withdrawn(&self, name: &str) -> Option<Failure> {
        let registered = self.at_start.tools.get(name)?;
        self.refusal(name, registered.hints())
    }

    fn not_reached(&self, name: &str) -> Option<Failure> {
        if self.reached.load(Ordering::Acquire) {
            return None;
        }
        let rest = name.strip_prefix(self.prefix.as_str())?.strip_prefix('_')?;
        if rest.is_empty() {
            return None;
        }
        let mut failure = Failure::new(FailureKind::UpstreamUnreachable {
            prefix: self.prefix.clone(),
            retry_after: Duration::from_millis(self.retry_in.load(Ordering::Relaxed)),
        });
        failure.not_sent = true;
        Some(failure)
    }

    fn prefix(&self) -> &str {
        &self.prefix
    }
}

impl Mount {
    /// What the upstream offers now.
    pub(crate) fn now(&self) -> Arc<Now> {
        match self.now.read() {
            Ok(now) => Arc::clone(&now),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Replaces what the upstream offers now with `offered`; whether that changed anything.
    pub(crate) fn offer(&self, offered: Offered) -> bool {
        let changed_since_start = offered.tools != self.at_start.tools;
        let before = self.now();
        if before.offered.tools == offered.tools {
            return false;
        }
        let now = Arc::new(Now {
            offered,
            changed_since_start,
        });
        match self.now.write() {
            Ok(mut slot) => *slot = now,
            Err(poisoned) => *poisoned.into_inner() = now,
        }
        true
    }

    /// Notes that the upstream answered a listing.
    pub(crate) fn mark_reached(&self) {
        self.reached.store(true, Ordering::Release);
    }

    /// Notes when an upstream not reached yet is tried next (`refresh.rs`), for the calls
    /// meanwhile to say.
    pub(crate) fn retry_in(&self, wait: Duration) {
        let millis = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
        self.retry_in.store(millis, Ordering::Relaxed);
    }

    /// What it offered at start.
    pub(crate) fn at_start(&self) -> &Offered {
        &self.at_start
    }

    /// Why a call of `listed` (registered with `hints`) is not sent: the upstream no longer
    /// offers that tool, or no longer says it is as safe to repeat as when it was registered
    /// (the retries and the cache it is called under would be wrong for it).
    fn refusal(&self, listed: &str, hints: Annotations) -> Option<Failure> {
        let now = self.now();
        let why = match now.offered.tools.get(listed) {
            None => format!(
                "upstream `{}` no longer offers the tool `{listed}`: it was removed upstream. List the tools again",
                self.prefix
            ),
            Some(offered) if !same_treatment(hints, offered.hints()) => format!(
                "upstream `{}` changed whether `{listed}` is read-only, destructive or idempotent since this server registered it; it is not called until the server restarts",
                self.prefix
            ),
            Some(_) => return None,
        };
        let mut failure = Failure::new(FailureKind::Handler(Classification::of(
            ErrorClass::InvalidInput,
        )));
        failure.chain = vec![why];
        failure.not_sent = true;
        Some(failure)
    }
}

/// Whether `prefix` can begin tool names: letters, digits, `_` and `-`, 1 to 64 of them.
pub(crate) fn check_prefix(prefix: &str) -> Result<(), String> {
    let valid = (1..=64).contains(&prefix.len())
        && prefix
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "the prefix `{}` must be 1 to 64 letters, digits, `_` or `-`",
            crate::limits::name(prefix)
        ))
    }
}

/// A mounted upstream, as `mount` made it.
pub(crate) struct Mounted<C> {
    /// A definition of each tool it offered at start, named `<prefix>_<name>`.
    pub(crate) definitions: Vec<ToolDefinition<C>>,
    pub(crate) mount: Arc<Mount>,
    /// Whether it answered within its connect timeout (one not [`required`](Upstream::required) may not).
    pub(crate) reached: bool,
    /// The tags of its tools.
    pub(crate) tags: &'static [&'static str],
}

/// Connects to `upstream`, lists its tools, and makes a definition of each, named
/// `<prefix>_<name>`. An upstream that cannot be reached is mounted with no tools, unless it is required
/// (the refresh lists them when it comes, `refresh.rs`).
pub(crate) async fn mount<C: Send + Sync + 'static>(
    prefix: &str,
    upstream: &Upstream,
    changed: Arc<ToolsChanged>,
) -> Result<Mounted<C>, String> {
    check_prefix(prefix)?;
    let tools_changed = Arc::new(tokio::sync::Notify::new());
    let link = Link::new(upstream, Arc::clone(&tools_changed))?;
    let (listed, reached) = match until_listed(&link, upstream.connect_timeout).await {
        Ok(listed) => (listed, true),
        Err(why) if !upstream.required => {
            tracing::warn!(target: "fusion::upstream", prefix, upstream = upstream.describe(), reason = %why, "upstream not reached: the server starts without its tools, and adds them when it answers");
            (Vec::new(), false)
        }
        Err(why) => return Err(why),
    };
    let mut names = Names::default();
    let at_start = super::offered::offered(prefix, listed, &mut names);
    let tags: &'static [&'static str] =
        Box::leak(vec!["upstream", leak(prefix.to_owned())].into_boxed_slice());
    // Registered in the order the upstream lists them.
    let start: Vec<(&'static str, OfferedTool)> = at_start
        .order
        .iter()
        .filter_map(|name| Some((*name, at_start.tools.get(name)?.clone())))
        .collect();
    let mount = Arc::new(Mount {
        prefix: prefix.to_owned(),
        link,
        circuit: upstream.policy.circuit.and_then(CircuitPolicy::breaker),
        cooldown: upstream
            .policy
            .circuit
            .map_or(Duration::ZERO, |circuit| circuit.cooldown),
        probing: AtomicBool::new(false),
        reached: AtomicBool::new(reached),
        retry_in: AtomicU64::new(u64::try_from(FIRST_RETRY.as_millis()).unwrap_or(u64::MAX)),
        identity: upstream.identity.clone(),
        changed,
        now: RwLock::new(Arc::new(Now {
            offered: Offered {
                tools: at_start.tools.clone(),
                order: at_start.order.clone(),
            },
            changed_since_start: false,
        })),
        at_start,
        names: Mutex::new(names),
        tools_changed,
    });
    let definitions = start
        .into_iter()
        .map(|(name, tool)| definition(&mount, upstream, name, &tool, tags, Texts::Leaked))
        .collect();
    Ok(Mounted {
        definitions,
        mount,
        reached,
        tags,
    })
}

/// A text made `'static`, as a [`ToolSpec`] holds it: only what an upstream lists at start
/// (bounded by what it lists then); names are interned (`offered.rs`).
fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

/// Whether a definition's description and title are leaked into its [`ToolSpec`]: at
/// start, once, for the contract and the tool search; a tool added later is listed from its
/// own description (`setup/mounts.rs`), so its spec keeps none and nothing is leaked.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Texts {
    Leaked,
    Left,
}

pub(crate) fn definition<C: Send + Sync + 'static>(
    mount: &Arc<Mount>,
    upstream: &Upstream,
    name: &'static str,
    offered: &OfferedTool,
    tags: &'static [&'static str],
    texts: Texts,
) -> ToolDefinition<C> {
    let tool = &offered.tool;
    let hints = tool.annotations.as_ref();
    let annotations = offered.hints();
    let read_only = annotations.read_only;
    let mut policy = upstream
        .tool_policies
        .get(tool.name.as_ref())
        .map_or(upstream.policy, |own| own.or(upstream.policy));
    // The upstream has one breaker (the mount's), not one per tool.
    policy.circuit = None;
    let title = tool
        .title
        .clone()
        .or_else(|| hints.and_then(|hints| hints.title.clone()));
    let (description, title) = match texts {
        Texts::Leaked => (
            leak(tool.description.as_deref().unwrap_or_default().to_owned()),
            title.map(leak),
        ),
        Texts::Left => ("", None),
    };
    let spec = ToolSpec {
        name,
        description,
        title,
        annotations,
        policy,
        group: None,
        action: None,
        idempotency_key: None,
        serialize: None,
        scopes: &[],
        tags,
        trace_arguments: false,
        max_output: None,
        cache: upstream.cache.filter(|_| read_only == Some(true)),
        invalidates: &[],
    };
    ToolDefinition {
        spec,
        input_schema: Arc::clone(&tool.input_schema),
        output_schema: tool.output_schema.clone(),
        wrap_structured: false,
        // The upstream checks its own arguments, by its own schema: what fusion's validator
        // would make of an arbitrary schema is not what the upstream accepts.
        validator: Validator::compile(&Map::new()),
        secret_keys: Vec::new(),
        default_issues: Vec::new(),
        invoker: Box::new(Forward {
            mount: Arc::clone(mount),
            tool: offered.upstream_name(),
            listed: name,
            hints: annotations,
        }),
        reconnect: None,
    }
}

/// Calls one tool of the upstream.
struct Forward {
    mount: Arc<Mount>,
    /// Its name upstream.
    tool: Arc<str>,
    /// Its name here.
    listed: &'static str,
    /// The hints it was registered with, which its retries and cache follow.
    hints: Annotations,
}

impl<C: Send + Sync + 'static> Invoke<C> for Forward {
    fn invoke<'a>(
        &'a self,
        _ctx: &'a C,
        call: &'a Call,
        args: &Value,
        _validator: &Validator,
    ) -> Result<BoxFuture<'a, Outcome>, Vec<ArgIssue>> {
        if let Some(refused) = self.mount.refusal(self.listed, self.hints) {
            return Ok(Box::pin(std::future::ready(Outcome::Failure(refused))));
        }
        #[cfg_attr(not(feature = "otel"), allow(unused_mut))]
        let mut params = json!({"name": &*self.tool, "arguments": args});
        #[cfg(feature = "otel")]
        if crate::log::otel::active() {
            // A CLIENT span around the upstream's call, whose context the upstream's own
            // server span continues.
            let span = crate::log::otel::client_span(&self.tool, &self.mount.prefix);
            if let Some(context) = crate::log::otel::trace_context_of(&span) {
                with_trace_context(&mut params, context);
            }
            let forwarded = forward(Arc::clone(&self.mount), params, call);
            return Ok(Box::pin(tracing::Instrument::instrument(forwarded, span)));
        }
        // Without a tracer of this server's, the caller's own trace context goes on, so
        // that the upstream's spans still join the caller's trace (kept with `otel` only).
        #[cfg(feature = "otel")]
        if let Some((parent, state)) = call.trace_context() {
            with_trace_context(&mut params, (parent.to_owned(), state.map(str::to_owned)));
        }
        Ok(Box::pin(forward(Arc::clone(&self.mount), params, call)))
    }
}

/// Puts W3C trace context in the request's `_meta`, as MCP carries it.
#[cfg(feature = "otel")]
fn with_trace_context(params: &mut Value, (parent, state): (String, Option<String>)) {
    let mut meta = Map::new();
    meta.insert("traceparent".to_owned(), Value::String(parent));
    if let Some(state) = state {
        meta.insert("tracestate".to_owned(), Value::String(state));
    }
    if let Value::Object(params) = params {
        params.insert("_meta".to_owned(), Value::Object(meta));
    }
}

/// Numbers the progress tokens this server sends upstreams.
static PROGRESS_TOKENS: AtomicU64 = AtomicU64::new(0);

/// How many of the upstream's progress notifications may wait for the caller's link.
const QUEUED_PROGRESS: usize = 16;

async fn forward(mount: Arc<Mount>, mut params: Value, call: &Call) -> Outcome {
    // Who calls, as the upstream is to be told: settled before anything is sent.
    let token =
        match super::identity::token_for(&mount.identity, &mount.prefix, call.request()).await {
            Ok(token) => token,
            Err(refused) => return Outcome::Failure(refused),
        };
    let _probe = match mount.circuit.as_ref().map(Circuit::admit) {
        Some(Admission::Reject(retry_after)) => {
            let mut failure = Failure::new(FailureKind::CircuitOpen { retry_after });
            failure.chain = vec![format!("upstream `{}` is down", mount.prefix)];
            failure.not_sent = true;
            return Outcome::Failure(failure);
        }
        Some(Admission::Probe(guard)) => Some(guard),
        Some(Admission::Run) | None => None,
    };
    // A caller that asked for progress gets the upstream's, under its own token.
    let (route, progress) = if call.wants_progress() {
        let (sender, progress) = tokio::sync::mpsc::channel(QUEUED_PROGRESS);
        let route = ProgressRoute {
            token: format!(
                "fusion-progress-{}",
                PROGRESS_TOKENS.fetch_add(1, Ordering::Relaxed)
            ),
            sender,
        };
        if let Value::Object(params) = &mut params
            && let Value::Object(meta) = params
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()))
        {
            meta.insert(
                "progressToken".to_owned(),
                Value::String(route.token.clone()),
            );
        }
        (Some(route), Some(progress))
    } else {
        (None, None)
    };
    let request = mount
        .link
        .request_as("tools/call", params, token.as_deref(), route.as_ref());
    let answer = match progress {
        None => request.await,
        Some(mut progress) => {
            let mut request = std::pin::pin!(request);
            let answer = loop {
                tokio::select! {
                    biased;
                    Some(made) = progress.recv() => {
                        call.progress(made.done, made.total, made.message).await;
                    }
                    answer = &mut request => break answer,
                }
            };
            // What came with the answer, read in the same poll, came before it.
            while let Ok(made) = progress.try_recv() {
                call.progress(made.done, made.total, made.message).await;
            }
            answer
        }
    };
    if let Some(circuit) = &mount.circuit {
        let transition = match &answer {
            Err(error) if error.is_unwell() => circuit.failure(),
            _ => circuit.success(),
        };
        match transition {
            Some(Transition::Opened) => {
                tracing::warn!(target: "fusion::upstream", prefix = %mount.prefix, "upstream is down: its tools are left out of tools/list until it answers again");
                mount.changed.notify();
                if !mount.probing.swap(true, Ordering::AcqRel) {
                    tokio::spawn(probe_until_up(Arc::clone(&mount)));
                }
            }
            Some(Transition::Closed) => {
                tracing::info!(target: "fusion::upstream", prefix = %mount.prefix, "upstream is up again");
                mount.changed.notify();
                // What it offers may have changed while it was down.
                mount.tools_changed.notify_one();
            }
            None => {}
        }
    }
    match answer {
        Ok(result) => super::outcome::from_result(result),
        Err(error) => Outcome::Failure(super::outcome::from_link_error(&mount.prefix, error)),
    }
}

/// While the upstream's breaker is open, a `ping` after each cooldown: the first answer
/// closes the breaker and lists its tools again, without waiting for a caller to probe a
/// tool it is no longer shown. Ends when the breaker is closed, whoever closed it.
async fn probe_until_up(mount: Arc<Mount>) {
    probe(&mount).await;
    mount.probing.store(false, Ordering::Release);
}

async fn probe(mount: &Mount) {
    let Some(circuit) = &mount.circuit else {
        return;
    };
    loop {
        tokio::time::sleep(mount.cooldown.max(Duration::from_millis(100))).await;
        let probe = match circuit.admit() {
            Admission::Run => return,
            // A caller's call is the probe now, or the breaker opened again.
            Admission::Reject(_) => continue,
            Admission::Probe(probe) => probe,
        };
        let pinged = tokio::time::timeout(
            super::DEFAULT_CONNECT_TIMEOUT,
            mount.link.request(rpc::PING, json!({})),
        )
        .await;
        if matches!(pinged, Ok(Ok(_))) {
            if circuit.success() == Some(Transition::Closed) {
                tracing::info!(target: "fusion::upstream", prefix = %mount.prefix, "upstream is up again");
                mount.changed.notify();
                // What it offers may have changed while it was down.
                mount.tools_changed.notify_one();
            }
            drop(probe);
            return;
        }
        circuit.failure();
        drop(probe);
    }
}
