//! The server: a registry of tools, the per-call context factory, and the call pipeline
//! that every transport and the in-memory tester go through.
//!
//! One call: look the tool up → build the context → decode and validate the arguments →
//! run the handler behind a panic boundary → render the outcome into exactly one
//! `CallToolResult` → log one event.

use std::{
    collections::HashMap,
    panic::AssertUnwindSafe,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use futures_util::FutureExt as _;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value};

use crate::{
    call::Call,
    error::{Failure, FailureKind, Target},
    idempotency::{Claim, ClaimGuard, IdempotencyStore, MemoryStore},
    log::Redactor,
    metrics::{MetricsSnapshot, ToolMetrics},
    middleware::{CallInfo, Guard, Middleware},
    output::Outcome,
    present::UiBlock,
    recover,
    recover::{Admission, Circuit, CircuitPolicy, Policy, RetryPolicy, Transition},
    registry::{Exposure, Registry},
    setup::error::{BuildError, StartupError, describe_build_errors},
    tool::{Tool, ToolDefinition},
    validate::Limits,
};

/// A built MCP server: its tools and how to make a context for each call.
///
/// Cheap to clone (one `Arc`). Serve it with [`Server::serve_stdio`], or test it in memory
/// with [`Tester`](crate::testing::Tester).
pub struct Server<C = ()> {
    inner: Arc<Inner<C>>,
}

impl<C> Clone for Server<C> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<C> std::fmt::Debug for Server<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.inner.name)
            .field("version", &self.inner.version)
            .field(
                "tools",
                &self
                    .inner
                    .registry
                    .wire
                    .iter()
                    .map(|t| &t.name)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

type ContextFactory<C> = Arc<dyn Fn() -> C + Send + Sync>;

struct Inner<C> {
    name: String,
    version: String,
    instructions: Option<String>,
    registry: Registry<C>,
    limits: Limits,
    context: ContextFactory<C>,
    /// Middleware per handler, by index: global, then group, then tool.
    chains: Vec<Vec<Arc<dyn Middleware<C>>>>,
    /// Per tool, by index: the effective policy and the circuit breaker.
    runtime: Vec<ToolRuntime>,
    /// Set once a handler returns a fatal error.
    fatal: tokio::sync::watch::Sender<bool>,
    /// Counters per handler, by index.
    metrics: Vec<ToolMetrics>,
    idempotency: Arc<dyn IdempotencyStore>,
    idempotency_window: Duration,
    /// The level of the event of a successful call.
    ok_level: tracing::Level,
    /// The client's `logging/setLevel`. One per server: over stdio a server has one
    /// client; over HTTP the last session to set it wins.
    log_level: std::sync::Mutex<Option<crate::call::LogLevel>>,
    /// Resources, prompts and completions (resource.rs, prompt.rs).
    catalog: crate::resource::Catalog,
}

struct ToolRuntime {
    policy: Policy,
    circuit: Option<Circuit>,
}

/// Builds a [`Server`]: `Server::builder(name, version).context(..).tool(..).build()`.
#[must_use = "a builder does nothing until it is built or served"]
pub struct ServerBuilder<C = ()> {
    name: String,
    version: String,
    instructions: Option<String>,
    context: ContextFactory<C>,
    tools: Vec<ToolDefinition<C>>,
    limits: Limits,
    policy: Policy,
    startup: Startup,
    exposure: Exposure,
    group_descriptions: HashMap<String, String>,
    middleware: Vec<(MiddlewareScope, Arc<dyn Middleware<C>>)>,
    ok_level: tracing::Level,
    idempotency: Arc<dyn IdempotencyStore>,
    idempotency_window: Duration,
    keep_schema_refs: bool,
    errors: Vec<BuildError>,
    /// Resources, prompts and completions, registered by resource.rs and prompt.rs.
    pub(crate) catalog: crate::resource::Catalog,
}

/// Where a middleware applies.
#[derive(Clone, Debug, PartialEq, Eq)]
enum MiddlewareScope {
    All,
    Group(String),
    Tool(String),
}

type SetupStep = Box<dyn FnOnce() -> crate::future::BoxFuture<'static, Result<(), String>> + Send>;

/// What must hold before a server starts serving.
#[derive(Default)]
struct Startup {
    required_env: Vec<String>,
    steps: Vec<SetupStep>,
}

impl Server<()> {
    /// Starts a server named `name` (reported as `serverInfo` to clients) at `version`.
    ///
    /// ```
    /// use fusion_runtime::prelude::*;
    ///
    /// /// Echo the text back.
    /// #[mcp_tool]
    /// async fn echo(text: String) -> String {
    ///     text
    /// }
    ///
    /// let server = Server::builder("demo", "1.0.0").tool(echo).build();
    /// assert_eq!(server.tool_names(), ["echo"]);
    /// ```
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder<()> {
        ServerBuilder {
            name: name.into(),
            version: version.into(),
            instructions: None,
            context: Arc::new(|| ()),
            tools: Vec::new(),
            limits: Limits::default(),
            policy: Policy::default(),
            startup: Startup::default(),
            exposure: Exposure::default(),
            group_descriptions: HashMap::new(),
            middleware: Vec::new(),
            ok_level: tracing::Level::INFO,
            idempotency: Arc::new(MemoryStore::new()),
            idempotency_window: Duration::from_secs(600),
            keep_schema_refs: false,
            errors: Vec::new(),
            catalog: crate::resource::Catalog::default(),
        }
    }
}

impl ServerBuilder<()> {
    /// Sets the factory that builds the context of each call; tools receive it through a
    /// `#[ctx]` parameter (`#[ctx] app: &App`). Call it before registering tools.
    ///
    /// The factory runs once per call, so a context usually holds `Arc`s to shared
    /// resources (a pool, an HTTP client) and per-call data (the caller's role).
    pub fn context<C, F>(self, factory: F) -> ServerBuilder<C>
    where
        C: Send + Sync + 'static,
        F: Fn() -> C + Send + Sync + 'static,
    {
        let mut errors = self.errors;
        if !self.tools.is_empty() || !self.middleware.is_empty() {
            errors.push(BuildError::ContextAfterTools(
                self.tools.len() + self.middleware.len(),
            ));
        }
        ServerBuilder {
            name: self.name,
            version: self.version,
            instructions: self.instructions,
            context: Arc::new(factory),
            tools: Vec::new(),
            limits: self.limits,
            policy: self.policy,
            startup: self.startup,
            exposure: self.exposure,
            group_descriptions: self.group_descriptions,
            middleware: Vec::new(),
            ok_level: self.ok_level,
            idempotency: self.idempotency,
            idempotency_window: self.idempotency_window,
            keep_schema_refs: self.keep_schema_refs,
            errors,
            catalog: self.catalog,
        }
    }
}

impl<C: Send + Sync + 'static> ServerBuilder<C> {
    /// Registers a tool: the name of an `#[mcp_tool]` function.
    pub fn tool<T: Tool<C>>(mut self, tool: T) -> Self {
        let definition = tool.definition();
        if !definition.default_issues.is_empty() {
            let details: Vec<String> = definition
                .default_issues
                .iter()
                .map(|issue| format!("`{}` must be {}", issue.path, issue.expected))
                .collect();
            self.errors.push(BuildError::InvalidDefault {
                tool: definition.spec.name.to_owned(),
                details: details.join("; "),
            });
        } else {
            // Duplicate names are found when the server is built, once groups are known.
            self.tools.push(definition);
        }
        self
    }

    /// The level of the log event of a successful call: info by default; debug keeps busy
    /// servers' logs to failures. Failures log at warn (the client's mistakes) or error.
    pub fn log_successes_at(mut self, level: tracing::Level) -> Self {
        self.ok_level = level;
        self
    }

    /// Where results of calls with an idempotency key are kept (in memory by default);
    /// replicas behind a load balancer share one store.
    pub fn idempotency_store(mut self, store: impl IdempotencyStore) -> Self {
        self.idempotency = Arc::new(store);
        self
    }

    /// How long a result is returned again for a repeated idempotency key (10 minutes by
    /// default).
    pub fn idempotency_window(mut self, window: Duration) -> Self {
        self.idempotency_window = window;
        self
    }

    /// Lists schemas with `$defs` and `$ref`s, as schemars writes them, instead of inlining
    /// every reference (the default: some clients do not resolve references).
    pub fn keep_schema_refs(mut self, keep: bool) -> Self {
        self.keep_schema_refs = keep;
        self
    }

    /// How grouped tools are listed: one tool per group (the default) or one per action.
    pub fn exposure(mut self, exposure: Exposure) -> Self {
        self.exposure = exposure;
        self
    }

    /// The description of a group's tool (otherwise one is composed from its actions').
    pub fn group(mut self, group: impl Into<String>, description: impl Into<String>) -> Self {
        self.group_descriptions
            .insert(group.into(), description.into());
        self
    }

    /// Middleware for every call, run first.
    pub fn middleware(mut self, middleware: impl Middleware<C>) -> Self {
        self.middleware
            .push((MiddlewareScope::All, Arc::new(middleware)));
        self
    }

    /// Middleware for every action of `group`, run after the server-wide ones.
    pub fn group_middleware(
        mut self,
        group: impl Into<String>,
        middleware: impl Middleware<C>,
    ) -> Self {
        self.middleware
            .push((MiddlewareScope::Group(group.into()), Arc::new(middleware)));
        self
    }

    /// Middleware for one tool (its name in `#[mcp_tool]`, or its listed name), run last.
    pub fn tool_middleware(
        mut self,
        tool: impl Into<String>,
        middleware: impl Middleware<C>,
    ) -> Self {
        self.middleware
            .push((MiddlewareScope::Tool(tool.into()), Arc::new(middleware)));
        self
    }

    /// The default deadline of one run of a handler (a tool's `timeout = ".."` wins).
    /// Without it, a run served over a transport stops after
    /// [`DEFAULT_TIMEOUT`](crate::DEFAULT_TIMEOUT) (5 minutes), so that no call stays in
    /// flight for good; `Duration::MAX` lifts the bound. (In the [`Tester`](crate::testing::Tester)
    /// only a timeout that is set applies.)
    ///
    /// ```
    /// use std::time::Duration;
    /// use fusion_runtime::Server;
    ///
    /// let server = Server::builder("calc", "1.0.0").timeout(Duration::from_secs(30)).build();
    /// # drop(server);
    /// ```
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.policy.timeout = Some(limit);
        self
    }

    /// The default retry policy for transient failures (a tool's `retry(..)` wins).
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.policy.retry = Some(retry);
        self
    }

    /// The default circuit breaker (a tool's `circuit(..)` wins).
    pub fn circuit(mut self, circuit: CircuitPolicy) -> Self {
        self.policy.circuit = Some(circuit);
        self
    }

    /// Makes errors of type `E` recognisable inside `Box<dyn Error>` and `anyhow::Error`
    /// returned by handlers (errors returned as themselves need nothing).
    pub fn classify<E: crate::Classify + std::error::Error + 'static>(self) -> Self {
        crate::classify::register::<E>();
        self
    }

    /// Refuses to start unless the environment variable `name` is set and not empty: a
    /// missing credential is a fatal start-up error (exit code 78), not a failure on the
    /// first call.
    pub fn require_env(mut self, name: impl Into<String>) -> Self {
        self.startup.required_env.push(name.into());
        self
    }

    /// A fallible step run once before serving (check a database, load configuration).
    /// An error stops the start with exit code 78 and the error on stderr.
    pub fn setup<F, Fut, E>(mut self, step: F) -> Self
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<(), E>> + Send + 'static,
        E: std::fmt::Display,
    {
        self.startup.steps.push(Box::new(move || {
            Box::pin(async move { step().await.map_err(|error| error.to_string()) })
        }));
        self
    }

    /// Builds the server and runs the start-up checks (`require_env`, `setup`): what the
    /// `serve_*` methods do before serving.
    ///
    /// # Errors
    /// The first check that fails, or the build errors.
    pub async fn start(mut self) -> Result<Server<C>, StartupError> {
        let startup = std::mem::take(&mut self.startup);
        let server = self.try_build().map_err(StartupError::Build)?;
        for name in startup.required_env {
            if std::env::var_os(&name).is_none_or(|value| value.is_empty()) {
                return Err(StartupError::MissingEnv(name));
            }
        }
        for step in startup.steps {
            step().await.map_err(StartupError::Setup)?;
        }
        Ok(server)
    }

    /// Size limits on arguments (depth, string bytes, items), checked before decoding.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Instructions for the model about the server as a whole (`initialize` result).
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Builds the server, or says every mistake in how it was put together.
    ///
    /// # Errors
    /// Duplicate tool names; `.context(..)` after tools.
    pub fn try_build(mut self) -> Result<Server<C>, Vec<BuildError>> {
        recover::install_panic_hook();
        let mut errors = self.errors;
        errors.extend(self.catalog.take_errors());
        let registry = match Registry::build(
            self.tools,
            self.exposure,
            &self.group_descriptions,
            self.keep_schema_refs,
        ) {
            Ok(registry) => Some(registry),
            Err(found) => {
                errors.extend(found);
                None
            }
        };
        if let Some(registry) = &registry {
            for (scope, _) in &self.middleware {
                if let MiddlewareScope::Group(name) | MiddlewareScope::Tool(name) = scope
                    && !registry.knows(name)
                {
                    errors.push(BuildError::UnknownTarget(name.clone()));
                }
            }
        }
        let Some(registry) = registry.filter(|_| errors.is_empty()) else {
            return Err(errors);
        };
        let handler_count = registry.handlers.len();
        let chains = registry
            .handlers
            .iter()
            .enumerate()
            .map(|(index, handler)| {
                let listed = registry.listed_name(index);
                let applies = |scope: &MiddlewareScope| match scope {
                    MiddlewareScope::All => true,
                    MiddlewareScope::Group(group) => handler.spec.group == Some(group.as_str()),
                    MiddlewareScope::Tool(tool) => {
                        handler.spec.name == tool || listed.as_deref() == Some(tool.as_str())
                    }
                };
                // Global, then group, then tool: the order the scopes were declared in
                // within each level.
                let mut chain = Vec::new();
                for level in 0..3 {
                    for (scope, middleware) in &self.middleware {
                        let scope_level = match scope {
                            MiddlewareScope::All => 0,
                            MiddlewareScope::Group(_) => 1,
                            MiddlewareScope::Tool(_) => 2,
                        };
                        if scope_level == level && applies(scope) {
                            chain.push(Arc::clone(middleware));
                        }
                    }
                }
                chain
            })
            .collect();
        let runtime = registry
            .handlers
            .iter()
            .map(|tool| {
                let policy = tool.spec.policy.or(self.policy);
                ToolRuntime {
                    policy,
                    circuit: policy.circuit.map(Circuit::new),
                }
            })
            .collect();
        Ok(Server {
            inner: Arc::new(Inner {
                name: self.name,
                version: self.version,
                instructions: self.instructions,
                registry,
                limits: self.limits,
                context: self.context,
                chains,
                runtime,
                fatal: tokio::sync::watch::channel(false).0,
                metrics: (0..handler_count).map(|_| ToolMetrics::default()).collect(),
                idempotency: self.idempotency,
                idempotency_window: self.idempotency_window,
                ok_level: self.ok_level,
                log_level: std::sync::Mutex::new(None),
                catalog: self.catalog,
            }),
        })
    }

    /// Builds the server.
    ///
    /// # Panics
    /// On the mistakes [`try_build`](Self::try_build) reports, with their messages: they are
    /// programming errors, found on the first start (as a router rejects overlapping routes).
    /// [`serve_stdio`](Self::serve_stdio) reports them and exits with code 78 instead.
    pub fn build(self) -> Server<C> {
        match self.try_build() {
            Ok(server) => server,
            Err(errors) => panic!("{}", describe_build_errors(&errors)),
        }
    }

    /// Builds the server and serves it over stdio until the client disconnects.
    ///
    /// Returns the process exit code: `0` after a normal end, `78` (`EX_CONFIG`) when the
    /// server could not be built, `1` when the transport failed.
    pub async fn serve_stdio(self) -> std::process::ExitCode {
        self.serve_stdio_with(crate::StdioOptions::default()).await
    }

    /// [`serve_stdio`](Self::serve_stdio) with other limits (line size, shutdown grace).
    pub async fn serve_stdio_with(self, options: crate::StdioOptions) -> std::process::ExitCode {
        match self.start().await {
            Ok(server) => {
                let code = server.serve_stdio_with(options).await;
                crate::log::flush();
                code
            }
            Err(error) => {
                crate::log::startup_failed(&error);
                crate::log::flush();
                eprintln!("fusion: cannot start: {error}");
                std::process::ExitCode::from(crate::exit::EXIT_CONFIG)
            }
        }
    }
}

/// The one log event of a call. If the call's future is dropped before it ends (the client
/// went away, a session closed), `Drop` logs it as cancelled: without that, such a call
/// would leave no trace in the log.
struct CallLog<'a> {
    tool: &'a str,
    action: Option<&'a str>,
    request_id: Option<&'a str>,
    args: &'a Value,
    correlation_id: &'a recover::CorrelationId,
    redactor: &'a Redactor,
    started: Instant,
    ok_level: tracing::Level,
    /// Cleared once the event is logged.
    armed: bool,
}

impl CallLog<'_> {
    /// Logs the call's event and returns its latency.
    fn finish(
        &mut self,
        outcome: &'static str,
        attempts: u32,
        failure: Option<&Failure>,
        message: &str,
    ) -> Duration {
        self.armed = false;
        let latency = self.started.elapsed();
        crate::log::call_event(&crate::log::CallRecord {
            tool: self.tool,
            action: self.action,
            request_id: self.request_id,
            args: self.args,
            correlation_id: self.correlation_id,
            latency,
            outcome,
            attempts,
            failure,
            message,
            redactor: self.redactor,
            ok_level: self.ok_level,
        });
        latency
    }
}

impl Drop for CallLog<'_> {
    fn drop(&mut self) {
        if self.armed {
            let failure = Failure::new(FailureKind::Cancelled);
            self.finish(
                "cancelled",
                0,
                Some(&failure),
                "the call was dropped before it ended (the client went away or the transport stopped)",
            );
        }
    }
}

/// Records on a failure how many times the handler ran.
fn with_attempts(outcome: Outcome, attempts: u32) -> Outcome {
    match outcome {
        Outcome::Failure(mut failure) => {
            failure.attempts = attempts;
            Outcome::Failure(failure)
        }
        success => success,
    }
}

fn request_id_text(id: &rmcp::model::RequestId) -> String {
    match id {
        rmcp::model::NumberOrString::Number(number) => number.to_string(),
        rmcp::model::NumberOrString::String(text) => text.to_string(),
    }
}

/// The full answer to one call: the wire result and, for the tester, the layers around it.
#[derive(Clone, Debug)]
pub(crate) struct CallReport {
    pub(crate) result: CallToolResult,
    pub(crate) data: Value,
    pub(crate) system_rules: Vec<String>,
    pub(crate) ui_blocks: Vec<UiBlock>,
    /// The handler returned a fatal error.
    pub(crate) fatal: bool,
}

impl CallReport {
    /// The report as stored for an idempotency key.
    fn to_json(&self) -> Value {
        serde_json::json!({
            "result": serde_json::to_value(&self.result).unwrap_or(Value::Null),
            "data": self.data,
            "system_rules": self.system_rules,
            "ui_blocks": serde_json::to_value(&self.ui_blocks).unwrap_or(Value::Null),
        })
    }

    /// A stored report; `None` if the store returned something else.
    fn from_json(stored: Value) -> Option<Self> {
        let Value::Object(mut stored) = stored else {
            return None;
        };
        Some(Self {
            result: serde_json::from_value(stored.remove("result")?).ok()?,
            data: stored.remove("data").unwrap_or(Value::Null),
            system_rules: serde_json::from_value(stored.remove("system_rules")?).ok()?,
            ui_blocks: serde_json::from_value(stored.remove("ui_blocks")?).ok()?,
            fatal: false,
        })
    }
}

/// The `_meta` key under which invalid-argument results list their problems, for
/// programmatic clients: `[{path, code, expected, received, hint}]`.
pub const ISSUES_META_KEY: &str = "fusion/issues";

static CALL_COUNTER: AtomicU64 = AtomicU64::new(0);

impl<C: Send + Sync + 'static> Server<C> {
    /// The server's name, as sent in `serverInfo`.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The server's version, as sent in `serverInfo`.
    pub fn version(&self) -> &str {
        &self.inner.version
    }

    /// The instructions sent in the `initialize` result, if any.
    pub fn instructions(&self) -> Option<&str> {
        self.inner.instructions.as_deref()
    }

    /// The registered tools' names, in registration order.
    pub fn tool_names(&self) -> Vec<String> {
        self.inner.registry.names()
    }

    /// The tools as `tools/list` describes them.
    pub fn tools(&self) -> &[rmcp::model::Tool] {
        &self.inner.registry.wire
    }

    /// One tool's definition.
    pub fn tool(&self, name: &str) -> Option<&ToolDefinition<C>> {
        self.inner
            .registry
            .handlers
            .iter()
            .find(|handler| handler.spec.name == name)
    }

    /// A fresh context from the server's factory.
    pub(crate) fn make_context(&self) -> Result<C, Failure> {
        let factory = &self.inner.context;
        std::panic::catch_unwind(AssertUnwindSafe(|| factory()))
            .map_err(|payload| Failure::panic(recover::panic_message(payload.as_ref())))
    }

    /// Runs one call through the whole pipeline and returns exactly one result.
    ///
    /// `args` may be absent (`Null`) or an object; anything else is an invalid-arguments
    /// result. `context` replaces the factory's context (the tester uses it).
    pub(crate) async fn call(
        &self,
        tool: &str,
        action: Option<&str>,
        args: Value,
        context: Option<C>,
        call: &Call,
    ) -> CallReport {
        let started = Instant::now();
        let call_number = CALL_COUNTER.fetch_add(1, Ordering::Relaxed);
        let correlation_id = recover::CorrelationId::new(call_number);
        let mut args = match args {
            Value::Null => Value::Object(Map::new()),
            other => other,
        };
        let resolved = self.inner.registry.resolve(tool, action, &mut args);
        let (handler, action) = match &resolved {
            Ok((index, resolved)) => (Some(*index), resolved.map(str::to_owned)),
            Err(_) => (None, action.map(str::to_owned)),
        };
        let target = Target {
            tool,
            action: action.as_deref(),
        };
        let redactor = match handler {
            Some(index) => Redactor::new(&self.inner.registry.handlers[index].secret_keys, &args),
            None => Redactor::default(),
        };
        // Counted in flight from here; the guard gives the count back however the call
        // ends, its future dropped included.
        let in_flight = handler.map(|index| self.inner.metrics[index].start());
        // A call whose future is dropped before it ends (the client went away, the session
        // closed) is still logged, once, as cancelled.
        let mut log = CallLog {
            tool,
            action: target.action,
            request_id: call.request_id(),
            args: &args,
            correlation_id: &correlation_id,
            redactor: &redactor,
            started,
            ok_level: self.inner.ok_level,
            armed: true,
        };
        // An idempotency key seen before returns the first call's result.
        let idempotency_key = handler.and_then(|index| self.idempotency_key(index, &target, &args));
        let mut claim = None;
        let mut cancelled_early = false;
        if let Some(key) = &idempotency_key {
            let store = &*self.inner.idempotency;
            // Await: waits while another run of the key is in progress. Holds `in_flight`
            // only; a drop here leaves no claim (the store's waiter goes with the future).
            let claimed = tokio::select! {
                biased;
                () = call.cancelled() => None,
                claimed = store.claim(key, self.inner.idempotency_window) => Some(claimed),
            };
            match claimed {
                Some(Claim::Replay(stored)) => match CallReport::from_json(stored) {
                    Some(report) => {
                        let latency = log.finish("replayed", 0, None, "");
                        if let Some(in_flight) = in_flight {
                            in_flight.finish("replayed", latency, 0);
                        }
                        return report;
                    }
                    // A stored result this build cannot read: run again, and store anew.
                    None => claim = Some(ClaimGuard::new(store, key)),
                },
                Some(Claim::Run) => claim = Some(ClaimGuard::new(store, key)),
                None => cancelled_early = true,
            }
        }
        // A cancelled request drops the handler's future (its destructors run); the
        // transport sends no answer for a cancelled id, as the protocol says. A request
        // cancelled before it started never starts.
        let (outcome, attempts) = match resolved {
            Err(kind) => (Outcome::Failure(Failure::new(kind)), 0),
            Ok(_) if cancelled_early => (Outcome::Failure(Failure::new(FailureKind::Cancelled)), 0),
            // Await: the call itself. Holds `in_flight` and `claim`; a drop here gives both
            // back (the claim is released, so a waiter or a retry of the key runs).
            Ok((index, _)) => tokio::select! {
                biased;
                () = call.cancelled() => (Outcome::Failure(Failure::new(FailureKind::Cancelled)), 0),
                finished = self.run(index, &target, &args, context, call, &redactor) => finished,
            },
        };
        // No `.await` from here on: the call ends in this poll.
        let (mut rendered, mut outcome_name) =
            self.render(&target, handler, outcome, &correlation_id, &redactor);
        if outcome_name == "ok" && attempts > 1 {
            outcome_name = "retried_ok";
        }
        if let Some(claim) = claim {
            // Successes are kept for the window; a failure frees the key for a new try.
            if rendered.failure.is_none() {
                claim.complete(rendered.report.to_json());
            } else {
                claim.release();
            }
        }
        let latency = log.finish(
            outcome_name,
            attempts,
            rendered.failure.as_ref(),
            rendered.report.data.as_str().unwrap_or(""),
        );
        if let Some(in_flight) = in_flight {
            in_flight.finish(outcome_name, latency, attempts);
        }
        if let Some(failure) = rendered
            .failure
            .as_ref()
            .filter(|failure| failure.is_fatal())
        {
            crate::log::fatal_event(tool, correlation_id.as_str(), failure, &redactor);
            rendered.report.fatal = true;
            // The answer goes out first; whoever serves the server ends the process.
            self.inner.fatal.send_replace(true);
        }
        rendered.report
    }

    /// Serves one `tools/call` from a transport: the request's id, progress token and
    /// cancellation become the tool's [`Call`].
    pub(crate) async fn serve_call(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> CallToolResult {
        let progress_token = context.meta.get_progress_token();
        let numbers = crate::validate::NumberLiterals::from_meta(&context.meta);
        let call = Call::connected(
            request_id_text(&context.id),
            progress_token,
            context.peer,
            context.ct,
            self.log_level(),
            numbers,
        );
        let args = request.arguments.map_or(Value::Null, Value::Object);
        self.call(&request.name, None, args, None, &call)
            .await
            .result
    }

    /// The resources, prompts and completions.
    pub(crate) fn catalog(&self) -> &crate::resource::Catalog {
        &self.inner.catalog
    }

    /// The level the client set with `logging/setLevel`, if it did.
    pub(crate) fn log_level(&self) -> Option<crate::call::LogLevel> {
        self.inner.log_level.lock().ok().and_then(|level| *level)
    }

    /// Records the level the client set with `logging/setLevel`.
    pub(crate) fn set_log_level(&self, level: crate::call::LogLevel) {
        if let Ok(mut current) = self.inner.log_level.lock() {
            *current = Some(level);
        }
    }

    /// Resolves once a handler has returned a fatal error: the process must end (exit
    /// code 70) after the answer to that call is written.
    pub async fn fatal_error(&self) {
        let mut receiver = self.inner.fatal.subscribe();
        // `wait_for` fails only when the sender is gone, and the server owns it.
        let _ = receiver.wait_for(|fatal| *fatal).await;
    }

    /// The store key of a call to a tool with an idempotency key argument that the call
    /// sets: the tool, the action and the key's value.
    fn idempotency_key(&self, index: usize, target: &Target<'_>, args: &Value) -> Option<String> {
        let name = self.inner.registry.handlers[index].spec.idempotency_key?;
        let value = match args.get(name)? {
            Value::String(text) if !text.is_empty() => text.clone(),
            Value::Number(number) => number.to_string(),
            _ => return None,
        };
        Some(format!(
            "{}/{}:{value}",
            target.tool,
            target.action.unwrap_or("")
        ))
    }

    /// The metrics of every tool handler: calls by outcome, latency percentiles, calls in
    /// flight, retries, circuit state.
    pub fn metrics(&self) -> MetricsSnapshot {
        let registry = &self.inner.registry;
        MetricsSnapshot {
            tools: registry
                .handlers
                .iter()
                .enumerate()
                .map(|(index, handler)| {
                    let name = match (handler.spec.group, handler.spec.action) {
                        (Some(group), Some(action)) => format!("{group}/{action}"),
                        _ => handler.spec.name.to_owned(),
                    };
                    let open = self.inner.runtime[index]
                        .circuit
                        .as_ref()
                        .is_some_and(Circuit::is_open);
                    self.inner.metrics[index].snapshot(&name, open)
                })
                .collect(),
        }
    }

    /// Whether a handler has returned a fatal error.
    pub fn has_failed_fatally(&self) -> bool {
        *self.inner.fatal.borrow()
    }

    async fn run(
        &self,
        index: usize,
        target: &Target<'_>,
        args: &Value,
        context: Option<C>,
        call: &Call,
        redactor: &Redactor,
    ) -> (Outcome, u32) {
        let mut context = match context {
            Some(context) => context,
            None => match self.make_context() {
                Ok(context) => context,
                Err(failure) => return (Outcome::Failure(failure), 0),
            },
        };
        let breaches = self.inner.limits.check(args);
        if !breaches.is_empty() {
            let kind = FailureKind::InvalidArguments(breaches);
            return (Outcome::Failure(Failure::new(kind)), 0);
        }
        // Middleware: global, then group, then tool. Guards (permits) live until the
        // handler is done.
        let info = CallInfo {
            tool: target.tool,
            action: target.action,
            args,
        };
        let mut guards: Vec<Guard> = Vec::new();
        for middleware in &self.inner.chains[index] {
            // Await: a middleware's own wait (a concurrency queue). Holds the guards of the
            // middleware before it (permits), released by their `Drop` if this is dropped.
            let verdict = AssertUnwindSafe(middleware.before(&mut context, &info))
                .catch_unwind()
                .await;
            match verdict {
                Ok(Ok(guard)) => guards.extend(guard),
                Ok(Err(failure)) => return (Outcome::Failure(failure), 0),
                Err(payload) => {
                    return (
                        Outcome::Failure(Failure::panic(recover::panic_message(payload.as_ref()))),
                        0,
                    );
                }
            }
        }
        // Await: the handler under its policy. Holds `guards` for its whole run.
        let finished = self
            .run_under_policy(index, &context, call, args, redactor)
            .await;
        drop(guards);
        finished
    }

    /// Runs the handler under the tool's policy: the circuit breaker first, then up to
    /// `attempts` runs, each under the timeout, retrying only transient failures after a
    /// backoff and a reconnect of the tool's resource. Returns the outcome and how many
    /// times the handler ran.
    async fn run_under_policy(
        &self,
        index: usize,
        context: &C,
        call: &Call,
        args: &Value,
        redactor: &Redactor,
    ) -> (Outcome, u32) {
        let definition = &self.inner.registry.handlers[index];
        let runtime = &self.inner.runtime[index];
        let tool = definition.spec.name;
        // Repeating a destructive call that is not idempotent may repeat its effect (a
        // second order, a second payment): never retried, whatever the server default.
        let unsafe_to_repeat = definition.spec.is_unsafe_to_repeat();
        let retry = if unsafe_to_repeat {
            RetryPolicy::NONE
        } else {
            runtime.policy.retry.unwrap_or(RetryPolicy::NONE)
        };
        // The probe of a half-open circuit holds its slot until its verdict is reported; if
        // this future is dropped first, the guard gives the slot back for the next call.
        let _probe = match runtime.circuit.as_ref().map(Circuit::admit) {
            Some(Admission::Reject(retry_after)) => {
                let kind = FailureKind::CircuitOpen { retry_after };
                return (Outcome::Failure(Failure::new(kind)), 0);
            }
            Some(Admission::Probe(guard)) => Some(guard),
            Some(Admission::Run) | None => None,
        };
        let mut attempt = 1;
        loop {
            // Await: one run of the handler (decode, handler, timeout). Holds `_probe`; a
            // drop here drops the handler's future, and its destructors run.
            let outcome = self
                .run_once(
                    definition,
                    context,
                    call,
                    args,
                    run_deadline(runtime.policy, call),
                )
                .await;
            let transient = matches!(&outcome, Outcome::Failure(failure) if failure.is_transient());
            if let Some(circuit) = &runtime.circuit {
                let transition = match &outcome {
                    Outcome::Success(_) => circuit.success(),
                    Outcome::Failure(_) if transient => circuit.failure(),
                    Outcome::Failure(failure) if failure.is_warning() => circuit.success(),
                    Outcome::Failure(_) => {
                        circuit.neutral();
                        None
                    }
                };
                if let Some(transition) = transition {
                    crate::log::circuit_event(tool, transition);
                    if transition == Transition::Opened {
                        return (with_attempts(outcome, attempt), attempt);
                    }
                }
            }
            if unsafe_to_repeat && transient {
                // A timeout or a dropped connection says nothing about whether the effect
                // happened: say so, instead of inviting a retry.
                let check_with = self.inner.registry.read_only_sibling(index);
                let kind = FailureKind::UnknownOutcome {
                    cause: match &outcome {
                        Outcome::Failure(failure) => failure.outcome_name(),
                        Outcome::Success(_) => "ok",
                    },
                    check_with,
                };
                let mut failure = Failure::new(kind);
                if let Outcome::Failure(original) = outcome {
                    failure.chain = original.chain;
                }
                return (with_attempts(Outcome::Failure(failure), attempt), attempt);
            }
            if !transient || attempt >= retry.attempts {
                return (with_attempts(outcome, attempt), attempt);
            }
            let mut delay = retry.delay(attempt + 1);
            if let Outcome::Failure(failure) = &outcome {
                // An upstream that says when to come back is believed, up to the cap.
                if let FailureKind::Handler(classification) = &failure.kind
                    && let Some(after) = classification.retry_after
                {
                    delay = delay.max(after.min(retry.max_backoff));
                }
                crate::log::retry_event(tool, attempt, retry.attempts, delay, failure, redactor);
            }
            if let Some(reconnect) = &definition.reconnect {
                let started = Instant::now();
                // Await: the single-flight reconnect. A drop here releases the resource's
                // gate with its generation unchanged, so the next caller reconnects.
                let (ran, result) = reconnect(context).await;
                if ran {
                    crate::log::reconnect_event(tool, started.elapsed(), result.as_ref().err());
                }
            }
            // Await: the backoff. Holds nothing but `_probe`.
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }

    /// One run of the handler: decode, then the future behind the panic boundary and the
    /// timeout. Dropping the future at the deadline runs the handler's destructors.
    async fn run_once(
        &self,
        definition: &ToolDefinition<C>,
        context: &C,
        call: &Call,
        args: &Value,
        timeout: Option<Duration>,
    ) -> Outcome {
        let validator = &definition.validator;
        // Decoding is user-controlled (custom `Deserialize` impls): inside the boundary too.
        let started = std::panic::catch_unwind(AssertUnwindSafe(|| {
            definition.invoker.invoke(context, call, args, validator)
        }));
        let future = match started {
            Ok(Ok(future)) => future,
            Ok(Err(issues)) => {
                return Outcome::Failure(Failure::new(FailureKind::InvalidArguments(issues)));
            }
            Err(payload) => {
                return Outcome::Failure(Failure::panic(recover::panic_message(payload.as_ref())));
            }
        };
        let guarded = AssertUnwindSafe(future).catch_unwind();
        // Await: the handler. Holds nothing of ours; a drop (deadline, cancellation) drops
        // the handler's future, so its destructors run.
        let finished = match timeout {
            Some(limit) => match tokio::time::timeout(limit, guarded).await {
                Ok(finished) => finished,
                Err(_) => return Outcome::Failure(Failure::new(FailureKind::Timeout { limit })),
            },
            None => guarded.await,
        };
        match finished {
            Ok(outcome) => outcome,
            Err(payload) => {
                Outcome::Failure(Failure::panic(recover::panic_message(payload.as_ref())))
            }
        }
    }

    fn render(
        &self,
        target: &Target<'_>,
        handler: Option<usize>,
        outcome: Outcome,
        correlation_id: &recover::CorrelationId,
        redactor: &Redactor,
    ) -> (Rendered, &'static str) {
        let mut failure = match outcome {
            Outcome::Success(output) => return (self.render_success(handler, output), "ok"),
            Outcome::Failure(failure) => failure,
        };
        // Before the issues become text: a secret that failed a check is not quoted, and
        // text that quotes input is cut (after the redaction, which needs whole values).
        if let FailureKind::InvalidArguments(issues) = &mut failure.kind {
            redactor.issues(issues);
        }
        // What the model reads never repeats a secret argument, even when an error
        // message or an invalid value quotes it.
        let message = redactor.text(&failure.message(target, correlation_id.as_str()));
        if failure.is_warning() {
            // Advice, not a failure: the model reads it as the tool's answer.
            let report = CallReport {
                result: CallToolResult::success(vec![ContentBlock::text(message.clone())]),
                data: Value::String(message),
                system_rules: Vec::new(),
                ui_blocks: Vec::new(),
                fatal: false,
            };
            return (
                Rendered {
                    report,
                    failure: Some(failure),
                },
                "warning",
            );
        }
        let mut result = CallToolResult::error(vec![ContentBlock::text(message.clone())]);
        if let FailureKind::InvalidArguments(issues) = &failure.kind {
            let details: Vec<Value> = issues
                .iter()
                .map(|issue| redactor.json(crate::validate::issue_json(issue)))
                .collect();
            let mut meta = Map::new();
            meta.insert(ISSUES_META_KEY.to_owned(), Value::Array(details));
            result = result.with_meta(Some(rmcp::model::MetaObject(meta)));
        }
        let name = failure.outcome_name();
        // No presentation layers on failure: no partial data leaks.
        let report = CallReport {
            result,
            data: Value::String(message),
            system_rules: Vec::new(),
            ui_blocks: Vec::new(),
            fatal: false,
        };
        (
            Rendered {
                report,
                failure: Some(failure),
            },
            name,
        )
    }

    fn render_success(
        &self,
        handler: Option<usize>,
        output: crate::output::ToolOutput,
    ) -> Rendered {
        let crate::output::ToolOutput {
            mut content,
            mut structured,
            mut data,
            presentation,
        } = output;
        if content.is_empty() {
            content.push(ContentBlock::text("done (the tool returned no content)"));
        }
        let (system_rules, ui_blocks) = match &presentation {
            Some(presentation) => {
                let rules =
                    crate::present::apply(presentation, &mut data, &mut structured, &mut content);
                (rules, presentation.ui.clone())
            }
            None => (Vec::new(), Vec::new()),
        };
        let wrap = handler.is_some_and(|index| self.inner.registry.handlers[index].wrap_structured);
        let structured = structured.map(|value| {
            if wrap {
                let mut object = Map::new();
                object.insert("result".into(), value);
                Value::Object(object)
            } else {
                value
            }
        });
        let mut result = CallToolResult::success(content);
        result.structured_content = structured;
        Rendered {
            report: CallReport {
                result,
                data,
                system_rules,
                ui_blocks,
                fatal: false,
            },
            failure: None,
        }
    }
}

struct Rendered {
    report: CallReport,
    failure: Option<Failure>,
}

/// The deadline of one run: the tool's or the server's `timeout`; for a call served over a
/// transport, else the generous default, so that no call is in flight for good. In the
/// tester the test decides how long it waits (and its runtime may have no timers).
fn run_deadline(policy: Policy, call: &Call) -> Option<Duration> {
    policy
        .timeout
        .or_else(|| call.is_served().then_some(crate::recover::DEFAULT_TIMEOUT))
}
