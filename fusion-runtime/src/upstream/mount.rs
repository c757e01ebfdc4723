//! An upstream's tools as this server's tool definitions: listed under the prefix, called
//! through the link, their answers and the link's failures turned into outcomes the
//! pipeline knows (transient, invalid input, internal, not sent), and one breaker for the
//! whole upstream.

use std::{
    collections::HashSet,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use serde_json::{Map, Value, json};

use super::{Upstream, link::Link, link_error::LinkError, rpc::ProgressRoute};
use crate::{
    call::Call,
    failure::{Classification, ErrorClass, ErrorCode, Failure, FailureKind},
    future::BoxFuture,
    policy::{Admission, Circuit, Transition},
    setup::mounts::ToolsChanged,
    tool::{Annotations, Invoke, Outcome, ToolDefinition, ToolOutput, ToolSpec},
    validate::{ArgIssue, Validator},
};

/// The most tools taken from one upstream, and the most pages of `tools/list` read.
const MAX_TOOLS: usize = 1000;
const MAX_PAGES: usize = 100;

/// The longest tool name MCP allows.
const MAX_TOOL_NAME: usize = 128;

/// One mounted upstream: its link, its breaker, and the names its tools are listed under.
pub(crate) struct Mount {
    pub(crate) prefix: String,
    link: Link,
    circuit: Option<Circuit>,
    /// How long the breaker stays open before a probe.
    cooldown: Duration,
    /// Whether a task pings the upstream until it is up (one at most).
    probing: AtomicBool,
    /// Who the upstream is told calls.
    identity: super::identity::Identity,
    /// Told when the upstream goes down or comes back.
    changed: Arc<ToolsChanged>,
    listed: HashSet<String>,
}

impl crate::setup::mounts::MountHealth for Mount {
    fn is_down(&self) -> bool {
        self.circuit
            .as_ref()
            .is_some_and(|circuit| !circuit.is_closed())
    }

    fn owns(&self, name: &str) -> bool {
        self.listed.contains(name)
    }

    fn prefix(&self) -> &str {
        &self.prefix
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

/// Connects to `upstream`, lists its tools, and makes a definition of each, named
/// `<prefix>_<name>`.
pub(crate) async fn mount<C: Send + Sync + 'static>(
    prefix: &str,
    upstream: &Upstream,
    changed: Arc<ToolsChanged>,
) -> Result<(Vec<ToolDefinition<C>>, Arc<Mount>), String> {
    check_prefix(prefix)?;
    let link = Link::new(upstream)?;
    let listed = until_listed(&link, upstream.connect_timeout).await?;
    let mut tools = Vec::new();
    for tool in listed {
        match serde_json::from_value::<rmcp::model::Tool>(tool) {
            Ok(tool) => tools.push(tool),
            Err(error) => {
                tracing::warn!(target: "fusion::upstream", prefix, %error, "a tool the upstream listed cannot be read; it is left out")
            }
        }
    }
    let mut mount = Mount {
        prefix: prefix.to_owned(),
        link,
        circuit: upstream.policy.circuit.map(Circuit::new),
        cooldown: upstream
            .policy
            .circuit
            .map_or(Duration::ZERO, |circuit| circuit.cooldown),
        probing: AtomicBool::new(false),
        identity: upstream.identity.clone(),
        changed,
        listed: HashSet::new(),
    };
    let mut specs = Vec::new();
    for tool in tools {
        let name = format!("{prefix}_{}", tool.name);
        let valid = name.len() <= MAX_TOOL_NAME
            && name
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.'));
        if !valid || mount.listed.contains(&name) {
            tracing::warn!(target: "fusion::upstream", prefix, tool = %crate::limits::name(&tool.name), "a tool whose name cannot be listed (or is listed twice) is left out");
            continue;
        }
        mount.listed.insert(name.clone());
        specs.push((name, tool));
    }
    let mount = Arc::new(mount);
    let tags: &'static [&'static str] =
        Box::leak(vec!["upstream", leak(prefix.to_owned())].into_boxed_slice());
    let definitions = specs
        .into_iter()
        .map(|(name, tool)| definition(&mount, upstream, name, tool, tags))
        .collect();
    Ok((definitions, mount))
}

/// The upstream's tools, asked for again while it cannot be reached (an upstream started
/// beside this server may not listen yet), until `within` runs out.
async fn until_listed(link: &Link, within: Duration) -> Result<Vec<Value>, String> {
    let deadline = tokio::time::Instant::now() + within;
    let mut last = String::from("no answer");
    loop {
        match tokio::time::timeout_at(deadline, list_tools(link)).await {
            Ok(Ok(listed)) => return Ok(listed),
            // Not reached: worth another try. Anything else is the upstream's answer.
            Ok(Err(LinkError::NotSent(why))) => last = why,
            Ok(Err(error)) => return Err(error.to_string()),
            Err(_) => return Err(format!("no tool list within {within:?} ({last})")),
        }
        if tokio::time::Instant::now() + RETRY_CONNECT >= deadline {
            return Err(format!("not reached within {within:?}: {last}"));
        }
        tokio::time::sleep(RETRY_CONNECT).await;
    }
}

/// How long a start waits between two tries to reach an upstream.
const RETRY_CONNECT: Duration = Duration::from_millis(200);

/// Every tool the upstream lists, page after page, up to [`MAX_TOOLS`].
async fn list_tools(link: &Link) -> Result<Vec<Value>, LinkError> {
    link.connect().await?;
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let page = link.request("tools/list", params).await?;
        if let Some(Value::Array(listed)) = page.get("tools") {
            tools.extend(listed.iter().take(MAX_TOOLS - tools.len()).cloned());
        }
        cursor = page
            .get("nextCursor")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if cursor.is_none() || tools.len() >= MAX_TOOLS {
            break;
        }
    }
    Ok(tools)
}

/// A name or a description made `'static`, as a [`ToolSpec`] holds them: an upstream is
/// mounted once, at start, so what is leaked is bounded by what it lists then.
fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

fn definition<C: Send + Sync + 'static>(
    mount: &Arc<Mount>,
    upstream: &Upstream,
    name: String,
    tool: rmcp::model::Tool,
    tags: &'static [&'static str],
) -> ToolDefinition<C> {
    let hints = tool.annotations.as_ref();
    let read_only = hints.and_then(|hints| hints.read_only_hint);
    let annotations = Annotations {
        read_only,
        // MCP's default for a tool that is not read-only: destructive. Written out, so
        // that fusion never repeats a tool the upstream did not say is safe to repeat.
        destructive: hints
            .and_then(|hints| hints.destructive_hint)
            .or((read_only != Some(true)).then_some(true)),
        idempotent: hints.and_then(|hints| hints.idempotent_hint),
        open_world: hints.and_then(|hints| hints.open_world_hint),
    };
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
    let spec = ToolSpec {
        name: leak(name),
        description: leak(tool.description.as_deref().unwrap_or_default().to_owned()),
        title: title.map(leak),
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
        input_schema: Arc::new((*tool.input_schema).clone()),
        output_schema: tool.output_schema.map(|schema| Arc::new((*schema).clone())),
        wrap_structured: false,
        // The upstream checks its own arguments, by its own schema: what fusion's validator
        // would make of an arbitrary schema is not what the upstream accepts.
        validator: Validator::compile(&Map::new()),
        secret_keys: Vec::new(),
        default_issues: Vec::new(),
        invoker: Box::new(Forward {
            mount: Arc::clone(mount),
            tool: tool.name.into_owned().into(),
        }),
        reconnect: None,
    }
}

/// Calls one tool of the upstream.
struct Forward {
    mount: Arc<Mount>,
    /// Its name upstream.
    tool: Arc<str>,
}

impl<C: Send + Sync + 'static> Invoke<C> for Forward {
    fn invoke<'a>(
        &'a self,
        _ctx: &'a C,
        call: &'a Call,
        args: &Value,
        _validator: &Validator,
    ) -> Result<BoxFuture<'a, Outcome>, Vec<ArgIssue>> {
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
            }
            None => {}
        }
    }
    match answer {
        Ok(result) => from_result(result),
        Err(error) => Outcome::Failure(from_link_error(&mount.prefix, error)),
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
            mount.link.request("ping", json!({})),
        )
        .await;
        if matches!(pinged, Ok(Ok(_))) {
            if circuit.success() == Some(Transition::Closed) {
                tracing::info!(target: "fusion::upstream", prefix = %mount.prefix, "upstream is up again");
                mount.changed.notify();
            }
            drop(probe);
            return;
        }
        circuit.failure();
        drop(probe);
    }
}

/// A `CallToolResult` from the upstream as an outcome: a success as it came, an error
/// result as a failure in the upstream's words, transient when a fusion upstream says so.
fn from_result(result: Value) -> Outcome {
    let result: rmcp::model::CallToolResult = match serde_json::from_value(result) {
        Ok(result) => result,
        Err(error) => {
            return Outcome::Failure(Failure::internal_message(format!(
                "the upstream's result is not a CallToolResult: {error}"
            )));
        }
    };
    if result.is_error != Some(true) {
        let (data, data_is_text) = match &result.structured_content {
            Some(structured) => (structured.clone(), false),
            None => (Value::Null, true),
        };
        return Outcome::Success(ToolOutput {
            content: result.content,
            structured: result.structured_content,
            data,
            data_is_text,
            presentation: None,
        });
    }
    let text: Vec<&str> = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.as_str()))
        .collect();
    let text = if text.is_empty() {
        "the upstream tool failed and said nothing more".to_owned()
    } else {
        text.join("\n")
    };
    // A fusion upstream says what kind of failure it was.
    let said = result
        .meta
        .as_ref()
        .and_then(|meta| meta.0.get(crate::meta::FAILURE_META_KEY));
    let transient = said
        .and_then(|entry| entry.get("class"))
        .and_then(Value::as_str)
        == Some("transient");
    let classification = if transient {
        Classification {
            retry_after: said
                .and_then(|entry| entry.get("retry_after_ms"))
                .and_then(Value::as_u64)
                .map(std::time::Duration::from_millis),
            ..Classification::of(ErrorClass::Transient)
        }
    } else {
        Classification::of(ErrorClass::InvalidInput)
    };
    let mut failure = Failure::new(FailureKind::Handler(classification));
    failure.chain = vec![text];
    Outcome::Failure(failure)
}

/// What the caller is told of a failure of the link, and how the pipeline treats it.
fn from_link_error(prefix: &str, error: LinkError) -> Failure {
    let (class, code, retry_after, not_sent, words) = match error {
        LinkError::NotSent(why) => (
            ErrorClass::Transient,
            None,
            None,
            true,
            format!("upstream `{prefix}` could not be sent the call: {why}"),
        ),
        LinkError::Lost(why) | LinkError::AlsoLost(why) => (
            ErrorClass::Transient,
            None,
            None,
            false,
            format!("upstream `{prefix}` did not answer: {why}"),
        ),
        LinkError::Status {
            status: 429,
            retry_after,
        } => (
            ErrorClass::Transient,
            Some(ErrorCode::RateLimited),
            retry_after,
            true,
            format!("upstream `{prefix}` is rate limiting this server"),
        ),
        LinkError::Status {
            status,
            retry_after,
        } if status >= 500 => (
            ErrorClass::Transient,
            None,
            retry_after,
            false,
            format!("upstream `{prefix}` answered HTTP {status}"),
        ),
        LinkError::Status { status, .. } => (
            ErrorClass::Internal,
            None,
            None,
            false,
            format!("upstream `{prefix}` answered HTTP {status}"),
        ),
        LinkError::Rpc { code, message } if code == -32602 || code == -32601 => {
            (ErrorClass::InvalidInput, None, None, false, message)
        }
        LinkError::Rpc { code, message } if code == -32603 || (-32099..=-32000).contains(&code) => {
            (
                ErrorClass::Transient,
                None,
                None,
                false,
                format!("upstream `{prefix}` failed: {message}"),
            )
        }
        LinkError::Rpc { code, message } => (
            ErrorClass::Internal,
            None,
            None,
            false,
            format!("upstream `{prefix}` answered JSON-RPC error {code}: {message}"),
        ),
        LinkError::TooLarge { limit } => (
            ErrorClass::InvalidInput,
            None,
            None,
            false,
            format!(
                "the answer of upstream `{prefix}` is larger than {limit} bytes, the most this server reads from it. \
                 Ask for less: a narrower filter, fewer items, or one page at a time"
            ),
        ),
        LinkError::Garbage(why) => (
            ErrorClass::Internal,
            None,
            None,
            false,
            format!("upstream `{prefix}` sent what is not MCP: {why}"),
        ),
    };
    let mut failure = Failure::new(FailureKind::Handler(Classification {
        class,
        code,
        hint: None,
        retry_after,
    }));
    failure.chain = vec![words];
    failure.not_sent = not_sent;
    failure
}
