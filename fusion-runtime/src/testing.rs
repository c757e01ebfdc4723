//! The in-memory tester: the real pipeline (lookup, context, validation, panic boundary,
//! rendering, logging) without a transport.
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

use rmcp::model::CallToolResult;
use serde_json::Value;

use crate::{
    call::Call, identity::RequestInfo, setup::server::Server, tool::present::UiBlock,
    validate::literal,
};

/// Calls a server's tools in memory, the way a client would over a transport.
#[derive(Clone, Debug)]
pub struct Tester<C = ()> {
    server: Server<C>,
    /// Who the calls come from: an in-memory caller without claims unless
    /// [`as_caller`](Tester::as_caller) says otherwise.
    request: RequestInfo,
}

/// The result of one call, split into the layers a test asserts on.
#[derive(Clone, Debug)]
pub struct TestResult {
    /// `isError` of the result.
    pub is_error: bool,
    /// On success, the handler's value as JSON (a string for text tools, `null` for `()`);
    /// on error, the error message as a JSON string.
    pub data: Value,
    /// Rules for the model from the tool's presenter; empty on error.
    pub system_rules: Vec<String>,
    /// UI blocks from the tool's presenter; empty on error.
    pub ui_blocks: Vec<UiBlock>,
    /// The `CallToolResult` exactly as a transport would send it.
    pub raw: CallToolResult,
    fatal: bool,
    notifications: Vec<Value>,
}

impl TestResult {
    /// All text content blocks, joined with newlines.
    pub fn text(&self) -> String {
        self.raw
            .content
            .iter()
            .filter_map(|block| block.as_text().map(|text| text.text.as_str()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Whether the handler returned a fatal error: served, the process would now exit
    /// with code 70; in the tester it only says so.
    pub fn is_fatal(&self) -> bool {
        self.fatal
    }

    /// The notifications the tool sent while it ran (`notifications/progress`,
    /// `notifications/message`), as `{"method", "params"}` objects.
    pub fn notifications(&self) -> &[Value] {
        &self.notifications
    }

    /// The result's `_meta["fusion/failure"]`, as a client reads it: present on every
    /// `isError` result and on warnings, `None` on a success.
    ///
    /// ```
    /// use fusion_runtime::{prelude::*, testing::Tester};
    ///
    /// /// Add two integers.
    /// #[mcp_tool]
    /// async fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let tester = Tester::new(Server::builder("calc", "1.0.0").tool(add).build());
    /// let refused = tester.call("ad", serde_json::json!({})).await;
    /// let entry = refused.failure().expect("an isError result has an entry");
    /// assert_eq!(entry.code.as_deref(), Some("unknown_tool"));
    /// assert_eq!(entry.hint.as_deref(), Some("did you mean `add`?"));
    /// assert!(tester.call("add", serde_json::json!({"a": 1, "b": 2})).await.failure().is_none());
    /// # });
    /// ```
    pub fn failure(&self) -> Option<crate::failure::entry::FailureEntry> {
        let entry = self
            .raw
            .meta
            .as_ref()?
            .0
            .get(crate::meta::FAILURE_META_KEY)?;
        serde_json::from_value(entry.clone()).ok()
    }

    /// The result as JSON, as it appears on the wire.
    pub fn wire_json(&self) -> Value {
        serde_json::to_value(&self.raw).unwrap_or(Value::Null)
    }
}

impl<C: Send + Sync + 'static> Tester<C> {
    /// A tester for a built server (what `Server::builder(..)...build()` returns).
    pub fn new(server: Server<C>) -> Self {
        Self {
            server,
            request: RequestInfo::in_memory(),
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
            server: self.server.clone(),
            request,
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
    /// unreadable.
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
        if let Err(message) =
            crate::contract::compare_with_file(&self.server.contract(), path.as_ref())
        {
            panic!("{message}");
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
        let call = Call::detached_as(numbers, self.request.clone());
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
        let context = self.adjusted(adjust);
        self.run(tool, Some(action), args, context).await
    }

    /// Calls `tool` (no action) with a context adjusted by `adjust`.
    pub async fn call_with(
        &self,
        tool: &str,
        args: Value,
        adjust: impl FnOnce(&mut C),
    ) -> TestResult {
        let context = self.adjusted(adjust);
        self.run(tool, None, args, context).await
    }

    /// A context from the server's factory, adjusted. `None` when the factory panics: the
    /// call then makes its own, and is reported like any other call that failed.
    fn adjusted(&self, adjust: impl FnOnce(&mut C)) -> Option<C> {
        let mut context = self.server.make_context(&self.request).ok()?;
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
        let call = Call::detached_as(Default::default(), self.request.clone());
        self.run_with(tool, action, args, context, call).await
    }

    async fn run_with(
        &self,
        tool: &str,
        action: Option<&str>,
        args: Value,
        context: Option<C>,
        call: Call,
    ) -> TestResult {
        let report = crate::pipeline::run(&self.server, tool, action, args, context, &call).await;
        TestResult {
            is_error: report.result.is_error == Some(true),
            data: report.data,
            system_rules: report.system_rules,
            ui_blocks: report.ui_blocks,
            raw: report.result,
            fatal: report.fatal,
            notifications: call.recorded(),
        }
    }
}
