//! The in-memory tester: the real pipeline (lookup, context, validation, policies, panic
//! boundary, rendering, logging) without a transport.
//!
//! ```
//! use fusion_runtime::prelude::*;
//! use fusion_runtime::testing::Tester;
//! use serde_json::json;
//!
//! /// Add two integers.
//! #[mcp_tool]
//! async fn add(a: i64, b: i64) -> i64 {
//!     a + b
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let tester = Tester::new(Server::builder("calc", "1.0.0").tool(add).build());
//! let ok = tester.call("add", json!({"a": 2, "b": 3})).await;
//! assert!(!ok.is_error);
//! assert_eq!(ok.data, json!(5));
//!
//! let bad = tester.call("add", json!({"a": 2, "b": "3"})).await;
//! assert!(bad.is_error);
//! assert!(bad.text().contains("send 3 without quotes"));
//! # });
//! ```
//!
//! What fusion is for can be proved the same way, without failing code in the tool:
//!
//! - [`Tester::inject`] puts a [`Fault`] in place of the handler for its next runs, inside
//!   the tool's policies: [`Fault::transient`] (with [`Fault::retry_after`]) proves the
//!   retries and the circuit breaker, [`Fault::delay`] the timeout, [`Fault::panic`] the
//!   panic boundary, [`Fault::internal`] the masking, [`Fault::fatal`] the fatal path.
//!   [`Fault`]'s documentation has one example of each. Faults sleep on tokio's clock:
//!   under `#[tokio::test(start_paused = true)]` a backoff of minutes takes no time.
//! - [`TestResult::attempts`] and [`Tester::log_events`]: how many runs a call took, and
//!   the call log's events of the tester's calls, secrets redacted.
//! - [`Tester::start`]: a call in the background, its progress watched and cancelled
//!   ([`CallHandle`]).
//! - [`Tester::untested`]: the tools no call has reached.
//! - [`Tester::with_context`]: a context the test builds, asynchronously.

mod coverage;
mod handle;
mod result;

use std::sync::Arc;

use serde_json::Value;

pub use crate::inject::fault::Fault;
pub use handle::{CallHandle, Progress};
pub use result::TestResult;

use crate::inject::watch::{Shared, Watch};
use crate::{
    call::Call, future::BoxFuture, identity::RequestInfo, setup::server::Server,
    validate::NumberLiterals, validate::literal,
};

/// Calls a server's tools in memory, the way a client would over a transport.
///
/// Cheap to clone; a clone, like an [`as_caller`](Tester::as_caller) copy, shares the
/// injected faults, the captured log events and the record of the tools reached.
pub struct Tester<C = ()> {
    server: Server<C>,
    /// Who the calls come from: an in-memory caller without claims unless
    /// [`as_caller`](Tester::as_caller) says otherwise.
    request: RequestInfo,
    shared: Arc<Shared>,
    /// The test's own context maker ([`with_context`](Tester::with_context)), in place of
    /// the server's factory.
    context: Option<ContextMaker<C>>,
}

/// Makes a call's context for the caller, asynchronously.
type ContextMaker<C> = Arc<dyn Fn(RequestInfo) -> BoxFuture<'static, C> + Send + Sync>;

impl<C> Clone for Tester<C> {
    fn clone(&self) -> Self {
        Self {
            server: self.server.clone(),
            request: self.request.clone(),
            shared: Arc::clone(&self.shared),
            context: self.context.clone(),
        }
    }
}

impl<C> std::fmt::Debug for Tester<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tester")
            .field("server", &self.server)
            .field("request", &self.request)
            .field("own_context", &self.context.is_some())
            .finish_non_exhaustive()
    }
}

impl<C: Send + Sync + 'static> Tester<C> {
    /// A tester for a built server (what `Server::builder(..)...build()` returns).
    pub fn new(server: Server<C>) -> Self {
        Self {
            server,
            request: RequestInfo::in_memory(),
            shared: Arc::default(),
            context: None,
        }
    }

    /// A tester whose calls get their context from `context`, made by the test (and
    /// awaited) for each call, instead of the server's factory: a database opened for
    /// the test, a fake upstream that must be started first. It is given the caller of
    /// the call, as the server's factory is. [`call_with`](Tester::call_with) adjusts
    /// the context it makes. It is made before the call enters the pipeline, so also for a
    /// call that is then refused (an unknown tool, a missing scope).
    ///
    /// ```
    /// use fusion_runtime::{prelude::*, testing::Tester};
    ///
    /// #[derive(Clone)]
    /// struct Ctx {
    ///     greeting: String,
    /// }
    ///
    /// /// Greet someone.
    /// #[mcp_tool]
    /// async fn greet(#[ctx] ctx: &Ctx, name: String) -> String {
    ///     format!("{}, {name}", ctx.greeting)
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let server = Server::builder("hello", "1")
    ///     .context(|| Ctx { greeting: "Hello".into() })
    ///     .tool(greet)
    ///     .build();
    /// let tester = Tester::with_context(server, |_caller| async {
    ///     // Whatever the test must await first: a fixture, a fake upstream.
    ///     tokio::task::yield_now().await;
    ///     Ctx { greeting: "Ahoy".into() }
    /// });
    /// assert_eq!(tester.call("greet", serde_json::json!({"name": "Ann"})).await.data, "Ahoy, Ann");
    /// # });
    /// ```
    pub fn with_context<F, Fut>(server: Server<C>, context: F) -> Self
    where
        F: Fn(RequestInfo) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = C> + Send + 'static,
    {
        let maker: ContextMaker<C> = Arc::new(move |request| Box::pin(context(request)));
        Self {
            context: Some(maker),
            ..Self::new(server)
        }
    }

    /// A tester of the same server whose calls come from `request`'s caller: its claims
    /// (subject, scopes), headers and session, as a transport would report them. The
    /// context factory, middleware and per-tool scopes see them.
    ///
    /// ```
    /// use fusion_runtime::{identity::{Claims, RequestInfo}, prelude::*, testing::Tester};
    ///
    /// /// Delete a row.
    /// #[mcp_tool(destructive, scopes = ["db:write"])]
    /// async fn delete(id: u32) -> String {
    ///     format!("deleted {id}")
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let tester = Tester::new(Server::builder("db", "1.0.0").tool(delete).build());
    /// let reader = tester.as_caller(
    ///     RequestInfo::in_memory().with_claims(Claims::for_subject("bob", ["db:read"])),
    /// );
    /// let refused = reader.call("delete", serde_json::json!({"id": 7})).await;
    /// assert!(refused.is_error);
    /// assert!(refused.text().contains("`db:write`"), "{}", refused.text());
    /// let writer = tester.as_caller(
    ///     RequestInfo::in_memory().with_claims(Claims::for_subject("ann", ["db:write"])),
    /// );
    /// assert_eq!(writer.call("delete", serde_json::json!({"id": 7})).await.data, "deleted 7");
    /// # });
    /// ```
    pub fn as_caller(&self, request: RequestInfo) -> Self {
        Self {
            request,
            ..self.clone()
        }
    }

    /// The server under test.
    pub fn server(&self) -> &Server<C> {
        &self.server
    }

    /// Holds the server's tool surface to the lockfile at `path` (relative to the crate
    /// being tested, where `cargo test` runs): passes when the server's
    /// [`contract`](Server::contract) is the one written there.
    ///
    /// With `FUSION_LOCK=update` in the environment it writes the file instead (and
    /// passes). Commit the file: a change to a tool's schema, hints, description or
    /// recovery policy then fails the tests until someone accepts it on purpose, and the
    /// lockfile's diff shows it in review.
    ///
    /// # Panics
    /// When the surface differs, with every change rated
    /// ([`Severity`](crate::contract::Severity)), worst first; when the file is missing or
    /// unreadable; when the surface costs more tokens than the server's
    /// [`token_budget`](crate::ServerBuilder::token_budget), naming each tool over it (after
    /// the lockfile is written, with `FUSION_LOCK=update`: the budget is not accepted away).
    ///
    /// ```
    /// use fusion_runtime::{prelude::*, testing::Tester};
    ///
    /// /// Echo the text back.
    /// #[mcp_tool(read_only)]
    /// async fn echo(text: String) -> String {
    ///     text
    /// }
    ///
    /// /// Echo the text back, twice.
    /// #[mcp_tool(name = "echo")]
    /// async fn echo_twice(text: String, times: u32) -> String {
    ///     text.repeat(times as usize)
    /// }
    ///
    /// let lock = std::env::temp_dir().join(format!("fusion-doc-{}.lock", std::process::id()));
    /// std::fs::write(&lock, Server::builder("demo", "1").tool(echo).build().contract().to_lockfile()).unwrap();
    /// Tester::new(Server::builder("demo", "1").tool(echo).build()).assert_contract(&lock);
    ///
    /// let changed = Tester::new(Server::builder("demo", "2").tool(echo_twice).build());
    /// let failure = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| changed.assert_contract(&lock))).unwrap_err();
    /// let message = failure.downcast_ref::<String>().unwrap();
    /// assert!(message.contains("BREAKING echo"), "{message}");
    /// # std::fs::remove_file(&lock).unwrap();
    /// ```
    #[track_caller]
    pub fn assert_contract(&self, path: impl AsRef<std::path::Path>) {
        let contract = self.server.contract();
        let locked = crate::contract::compare_with_file(&contract, path.as_ref()).err();
        let budget = self.server.inner.token_budget;
        let over = budget.and_then(|budget| budget.check(&contract).err());
        let failures: Vec<String> = locked
            .into_iter()
            .chain(over.map(|over| over.to_string()))
            .collect();
        if !failures.is_empty() {
            panic!("{}", failures.join("\n"));
        }
    }

    /// The names `tools/list` shows the tester's caller, in order: every tool, unless the
    /// server hides some ([`hide_unauthorized`](crate::ServerBuilder::hide_unauthorized),
    /// [`visibility`](crate::ServerBuilder::visibility)).
    ///
    /// ```
    /// use fusion_runtime::{prelude::*, testing::Tester};
    ///
    /// /// Add two integers.
    /// #[mcp_tool]
    /// async fn add(a: i64, b: i64) -> i64 { a + b }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let tester = Tester::new(Server::builder("calc", "1").tool(add).build());
    /// assert_eq!(tester.tools().await, ["add"]);
    /// # });
    /// ```
    pub async fn tools(&self) -> Vec<String> {
        self.server
            .tools_for(&self.request)
            .iter()
            .map(|tool| tool.name.to_string())
            .collect()
    }

    /// The tools as `tools/list` describes them to the tester's caller: for a grouped
    /// tool, its schema and hints built from the actions the caller is shown.
    pub async fn list_tools(&self) -> Vec<rmcp::model::Tool> {
        self.server.tools_for(&self.request).into_owned()
    }

    /// Calls `tool` with `args` (an object, or `null` for none).
    pub async fn call(&self, tool: &str, args: Value) -> TestResult {
        self.run(tool, None, args, None).await
    }

    /// Calls `tool` with arguments given as JSON text, parsed as a transport parses them:
    /// numbers that a `serde_json::Value` cannot hold exactly (`9007199254740993.0`,
    /// `-9223372036854775809`, `1.5e1`) are judged by their literal text, as they are when
    /// served over stdio or HTTP. [`call`](Self::call) with `json!(..)` only has the
    /// `f64` such a literal becomes.
    ///
    /// ```
    /// use fusion_runtime::prelude::*;
    /// use fusion_runtime::testing::Tester;
    ///
    /// /// Echo an integer.
    /// #[mcp_tool]
    /// async fn id(n: u64) -> String {
    ///     n.to_string()
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let tester = Tester::new(Server::builder("ids", "1.0.0").tool(id).build());
    /// // 2^53 + 1 written as a float arrives exactly.
    /// let exact = tester.call_json("id", r#"{"n": 9007199254740993.0}"#).await;
    /// assert_eq!(exact.data, "9007199254740993");
    /// // Not an integer, though its f64 is: refused with the literal as sent.
    /// let fraction = tester.call_json("id", r#"{"n": 4611686018427387903.5}"#).await;
    /// assert!(fraction.is_error);
    /// assert!(fraction.text().contains("received 4611686018427387903.5"));
    /// # });
    /// ```
    ///
    /// # Panics
    /// When `json` is not JSON (a test's own mistake; a transport answers such input with
    /// a parse error before any tool is called).
    pub async fn call_json(&self, tool: &str, json: &str) -> TestResult {
        let args: Value = serde_json::from_str(json).unwrap_or_else(|error| {
            panic!("call_json({tool:?}): the arguments are not JSON: {error}")
        });
        let numbers = literal::literals_of(json, &args);
        let call = self.new_call(numbers);
        self.run_with(tool, None, args, None, call).await
    }

    /// Calls `action` of a grouped `tool`.
    pub async fn call_action(&self, tool: &str, action: &str, args: Value) -> TestResult {
        self.run(tool, Some(action), args, None).await
    }

    /// Calls `action` of `tool` with a context adjusted by `adjust` (say, another role).
    pub async fn call_action_with(
        &self,
        tool: &str,
        action: &str,
        args: Value,
        adjust: impl FnOnce(&mut C),
    ) -> TestResult {
        let context = self.adjusted(adjust).await;
        self.run(tool, Some(action), args, context).await
    }

    /// Calls `tool` (no action) with a context adjusted by `adjust`.
    pub async fn call_with(
        &self,
        tool: &str,
        args: Value,
        adjust: impl FnOnce(&mut C),
    ) -> TestResult {
        let context = self.adjusted(adjust).await;
        self.run(tool, None, args, context).await
    }

    /// A context from the test's maker or the server's factory, adjusted. `None` when the
    /// factory panics: the call then makes its own, and is reported like any other call
    /// that failed.
    async fn adjusted(&self, adjust: impl FnOnce(&mut C)) -> Option<C> {
        let mut context = match &self.context {
            Some(make) => make(self.request.clone()).await,
            None => self.server.make_context(&self.request).ok()?,
        };
        adjust(&mut context);
        Some(context)
    }

    async fn run(
        &self,
        tool: &str,
        action: Option<&str>,
        args: Value,
        context: Option<C>,
    ) -> TestResult {
        let call = self.new_call(NumberLiterals::default());
        self.run_with(tool, action, args, context, call).await
    }

    /// A call from the tester's caller, watched by the tester.
    fn new_call(&self, numbers: NumberLiterals) -> Call {
        let watch = Watch::new(Arc::clone(&self.shared));
        Call::watched(numbers, self.request.clone(), watch)
    }

    async fn run_with(
        &self,
        tool: &str,
        action: Option<&str>,
        args: Value,
        context: Option<C>,
        call: Call,
    ) -> TestResult {
        self.reach(tool, action, &args, call.request());
        let context = match (context, &self.context) {
            (Some(context), _) => Some(context),
            (None, Some(make)) => Some(make(call.request().clone()).await),
            (None, None) => None,
        };
        let report = crate::pipeline::run(&self.server, tool, action, args, context, &call).await;
        TestResult::new(report, &call)
    }
}

/// Faults, the call log, and calls in the background.
impl<C: Send + Sync + 'static> Tester<C> {
    /// Arms `fault` for the next runs of `tool`'s handler: for [`Fault::times`] runs (once
    /// by default) the fault runs in its place, inside the tool's policies (see
    /// [`Fault`]). Faults injected for the same tool take their turns in the order they
    /// were injected. For a grouped tool, `tool` is the group and the fault is armed for
    /// whichever of its actions runs next; [`inject_action`](Tester::inject_action) names
    /// one.
    ///
    /// The fault is shared with this tester's clones and
    /// [`as_caller`](Tester::as_caller) copies, and with calls already started.
    ///
    /// ```
    /// use fusion_runtime::{prelude::*, testing::{Fault, Tester}};
    ///
    /// /// Fetch a price.
    /// #[mcp_tool(read_only, retry(attempts = 3, backoff = "2m"))]
    /// async fn price(sku: String) -> String {
    ///     format!("{sku}: 9.99")
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap().block_on(async {
    /// let tester = Tester::new(Server::builder("shop", "1").tool(price).build());
    /// tester.inject("price", Fault::transient("upstream 503").times(2));
    /// // Under a paused clock the backoffs of minutes pass at once.
    /// let result = tester.call("price", serde_json::json!({"sku": "A1"})).await;
    /// assert!(!result.is_error);
    /// assert_eq!(result.attempts(), 3);
    /// assert_eq!(tester.log_events()[0]["fields"]["outcome"], "retried_ok");
    /// # });
    /// ```
    ///
    /// # Panics
    /// When the server has no tool (or group) named `tool`: a fault that could never fire
    /// is a mistake in the test.
    #[track_caller]
    pub fn inject(&self, tool: &str, fault: Fault) {
        if !self.has(tool, None) {
            panic!(
                "inject({tool:?}): the server has no tool or group `{tool}`; it has {:?}",
                self.all_names()
            );
        }
        self.shared.arm(tool, None, fault);
    }

    /// Arms `fault` for the next runs of `action` of the grouped `tool`, as
    /// [`inject`](Tester::inject) does for a tool.
    ///
    /// ```
    /// use fusion_runtime::{prelude::*, testing::{Fault, Tester}};
    ///
    /// /// List notes.
    /// #[mcp_tool(group = "notes", action = "list", read_only)]
    /// async fn list() -> Vec<String> { vec!["milk".into()] }
    ///
    /// /// Add a note.
    /// #[mcp_tool(group = "notes", action = "add")]
    /// async fn add(text: String) -> String { text }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let tester = Tester::new(Server::builder("notes", "1").tool(list).tool(add).build());
    /// tester.inject_action("notes", "add", Fault::internal("disk full"));
    /// assert!(!tester.call_action("notes", "list", serde_json::json!({})).await.is_error);
    /// let added = tester.call_action("notes", "add", serde_json::json!({"text": "eggs"})).await;
    /// assert_eq!(added.failure().unwrap().class, "internal");
    /// # });
    /// ```
    ///
    /// # Panics
    /// When the server has no grouped tool `tool` with the action `action`.
    #[track_caller]
    pub fn inject_action(&self, tool: &str, action: &str, fault: Fault) {
        if !self.has(tool, Some(action)) {
            panic!(
                "inject_action({tool:?}, {action:?}): the server has no action `{action}` of a \
                 grouped tool `{tool}`; it has {:?}",
                self.all_names()
            );
        }
        self.shared.arm(tool, Some(action), fault);
    }

    /// The call log's events of the calls made through this tester (and its clones and
    /// [`as_caller`](Tester::as_caller) copies), in the order the calls ended, whether or
    /// not a log subscriber is installed. Each is the JSON object the JSON log writes:
    /// `{"timestamp", "level", "fields": {"message", "tool", "action", "request_id",
    /// "caller", "correlation_id", "latency_us", "outcome", "attempts", "arguments",
    /// ..}, "target": "fusion::call"}`, with `error` (and, for a masked failure,
    /// `source_chain`) on a failure. `arguments` is the arguments' JSON as text, with
    /// `secret` values `"[redacted]"`, as in the log.
    ///
    /// ```
    /// use fusion_runtime::{prelude::*, testing::Tester};
    ///
    /// /// Log in.
    /// #[mcp_tool]
    /// async fn login(user: String, #[arg(secret)] password: String) -> String {
    ///     format!("welcome, {user}")
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let tester = Tester::new(Server::builder("auth", "1").tool(login).build());
    /// tester.call("login", serde_json::json!({"user": "ann", "password": "hunter2"})).await;
    /// let events = tester.log_events();
    /// let fields = &events[0]["fields"];
    /// assert_eq!(fields["outcome"], "ok");
    /// let arguments: serde_json::Value = serde_json::from_str(fields["arguments"].as_str().unwrap()).unwrap();
    /// assert_eq!(arguments, serde_json::json!({"user": "ann", "password": "[redacted]"}));
    /// # });
    /// ```
    pub fn log_events(&self) -> Vec<Value> {
        self.shared.events()
    }

    /// Starts a call to `tool` with `args` in the background, on the current tokio
    /// runtime, and returns at once: the [`CallHandle`] shows its progress, cancels it,
    /// and gives its result.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn start(&self, tool: &str, args: Value) -> CallHandle {
        let call = self.new_call(NumberLiterals::default());
        let tester = self.clone();
        let tool = tool.to_owned();
        let watched = call.clone();
        let task =
            tokio::spawn(async move { tester.run_with(&tool, None, args, None, call).await });
        CallHandle {
            call: watched,
            task,
        }
    }
}
