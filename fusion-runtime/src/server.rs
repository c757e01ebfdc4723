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
    time::Instant,
};

use futures_util::FutureExt as _;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value};

use crate::{
    error::{Failure, FailureKind},
    output::Outcome,
    present::UiBlock,
    recover,
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
                    .wire_tools
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
    tools: Vec<ToolDefinition<C>>,
    limits: Limits,
    by_name: HashMap<&'static str, usize>,
    /// The `tools/list` answer, built once.
    wire_tools: Vec<rmcp::model::Tool>,
    context: ContextFactory<C>,
}

/// A mistake in how a server was put together, found by [`ServerBuilder::try_build`].
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// Two tools share a name; the second would silently replace the first.
    #[error("two tools are named `{0}`; rename one with `#[mcp_tool(name = \"...\")]`")]
    DuplicateTool(String),
    /// A parameter's `default` breaks its own constraints (a default written as an
    /// expression can only be checked when the tool is registered).
    #[error("tool `{tool}`: a default value breaks its own constraints: {details}")]
    InvalidDefault {
        /// The tool.
        tool: String,
        /// The problems, one per line.
        details: String,
    },
    /// `.context(..)` was called after tools were registered for the unit context.
    #[error(
        "`.context(..)` was called after {0} tool(s) were registered; call `.context(..)` first, right after `Server::builder(..)`"
    )]
    ContextAfterTools(usize),
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
    errors: Vec<BuildError>,
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
            errors: Vec::new(),
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
        if !self.tools.is_empty() {
            errors.push(BuildError::ContextAfterTools(self.tools.len()));
        }
        ServerBuilder {
            name: self.name,
            version: self.version,
            instructions: self.instructions,
            context: Arc::new(factory),
            tools: Vec::new(),
            limits: self.limits,
            errors,
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
        } else if self
            .tools
            .iter()
            .any(|known| known.spec.name == definition.spec.name)
        {
            self.errors
                .push(BuildError::DuplicateTool(definition.spec.name.to_owned()));
        } else {
            self.tools.push(definition);
        }
        self
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
    pub fn try_build(self) -> Result<Server<C>, Vec<BuildError>> {
        if !self.errors.is_empty() {
            return Err(self.errors);
        }
        let by_name = self
            .tools
            .iter()
            .enumerate()
            .map(|(index, tool)| (tool.spec.name, index))
            .collect();
        let wire_tools = self.tools.iter().map(wire_tool).collect();
        Ok(Server {
            inner: Arc::new(Inner {
                name: self.name,
                version: self.version,
                instructions: self.instructions,
                tools: self.tools,
                limits: self.limits,
                by_name,
                wire_tools,
                context: self.context,
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
        match self.try_build() {
            Ok(server) => server.serve_stdio().await,
            Err(errors) => {
                eprintln!("fusion: {}", describe_build_errors(&errors));
                std::process::ExitCode::from(crate::transport::EXIT_CONFIG)
            }
        }
    }
}

fn describe_build_errors(errors: &[BuildError]) -> String {
    let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
    format!("the server cannot be built:\n  - {}", lines.join("\n  - "))
}

fn wire_tool<C>(definition: &ToolDefinition<C>) -> rmcp::model::Tool {
    let spec = &definition.spec;
    let mut tool = rmcp::model::Tool::new(
        spec.name,
        spec.description,
        Arc::clone(&definition.input_schema),
    );
    if let Some(title) = spec.title {
        tool = tool.with_title(title);
    }
    if let Some(schema) = &definition.output_schema {
        tool = tool.with_raw_output_schema(Arc::clone(schema));
    }
    if !spec.annotations.is_empty() {
        let hints = spec.annotations;
        let mut annotations = rmcp::model::ToolAnnotations::new();
        annotations.read_only_hint = hints.read_only;
        annotations.destructive_hint = hints.destructive;
        annotations.idempotent_hint = hints.idempotent;
        annotations.open_world_hint = hints.open_world;
        annotations.title = spec.title.map(str::to_owned);
        tool = tool.with_annotations(annotations);
    }
    tool
}

/// The full answer to one call: the wire result and, for the tester, the layers around it.
#[derive(Clone, Debug)]
pub(crate) struct CallReport {
    pub(crate) result: CallToolResult,
    pub(crate) data: Value,
    pub(crate) system_rules: Vec<String>,
    pub(crate) ui_blocks: Vec<UiBlock>,
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
    pub fn tool_names(&self) -> Vec<&'static str> {
        self.inner.tools.iter().map(|tool| tool.spec.name).collect()
    }

    /// The tools as `tools/list` describes them.
    pub fn tools(&self) -> &[rmcp::model::Tool] {
        &self.inner.wire_tools
    }

    /// One tool's definition.
    pub fn tool(&self, name: &str) -> Option<&ToolDefinition<C>> {
        self.inner
            .by_name
            .get(name)
            .map(|&index| &self.inner.tools[index])
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
    ) -> CallReport {
        let started = Instant::now();
        let call_number = CALL_COUNTER.fetch_add(1, Ordering::Relaxed);
        let correlation_id = recover::correlation_id(call_number);
        let args = match args {
            Value::Null => Value::Object(Map::new()),
            other => other,
        };
        let outcome = self.run(tool, action, &args, context).await;
        let (report, outcome_name) = self.render(tool, outcome, &correlation_id);
        crate::log::call_event(&crate::log::CallRecord {
            tool,
            action,
            args: &args,
            correlation_id: &correlation_id,
            latency: started.elapsed(),
            outcome: outcome_name,
            failure: report.failure.as_ref(),
            message: report.report.data.as_str().unwrap_or(""),
        });
        report.report
    }

    async fn run(
        &self,
        tool: &str,
        action: Option<&str>,
        args: &Value,
        context: Option<C>,
    ) -> Outcome {
        let Some(&index) = self.inner.by_name.get(tool) else {
            return Outcome::Failure(Failure::new(FailureKind::UnknownTool {
                requested: tool.to_owned(),
                available: self
                    .inner
                    .tools
                    .iter()
                    .map(|t| t.spec.name.to_owned())
                    .collect(),
            }));
        };
        let definition = &self.inner.tools[index];
        if let Some(action) = action {
            // Grouped tools with actions arrive with their own registry; a plain tool has none.
            return Outcome::Failure(Failure::new(FailureKind::UnknownAction {
                tool: tool.to_owned(),
                requested: action.to_owned(),
                available: Vec::new(),
            }));
        }
        let context = match context {
            Some(context) => context,
            None => match self.make_context() {
                Ok(context) => context,
                Err(failure) => return Outcome::Failure(failure),
            },
        };
        let breaches = self.inner.limits.check(args);
        if !breaches.is_empty() {
            return Outcome::Failure(Failure::new(FailureKind::InvalidArguments(breaches)));
        }
        let validator = &definition.validator;
        // Decoding is user-controlled (custom `Deserialize` impls): inside the boundary too.
        let started = std::panic::catch_unwind(AssertUnwindSafe(|| {
            definition.invoker.invoke(&context, args, validator)
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
        match AssertUnwindSafe(future).catch_unwind().await {
            Ok(outcome) => outcome,
            Err(payload) => {
                Outcome::Failure(Failure::panic(recover::panic_message(payload.as_ref())))
            }
        }
    }

    fn render(
        &self,
        tool: &str,
        outcome: Outcome,
        correlation_id: &str,
    ) -> (Rendered, &'static str) {
        match outcome {
            Outcome::Success(output) => {
                let mut content = output.content;
                if content.is_empty() {
                    content.push(ContentBlock::text("done (the tool returned no content)"));
                }
                let wrap = self
                    .tool(tool)
                    .is_some_and(|definition| definition.wrap_structured);
                let structured = output.structured.map(|value| {
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
                let report = CallReport {
                    result,
                    data: output.data,
                    system_rules: Vec::new(),
                    ui_blocks: Vec::new(),
                };
                (
                    Rendered {
                        report,
                        failure: None,
                    },
                    "ok",
                )
            }
            Outcome::Failure(failure) => {
                let message = failure.message(tool, correlation_id);
                let mut result = CallToolResult::error(vec![ContentBlock::text(message.clone())]);
                if let FailureKind::InvalidArguments(issues) = &failure.kind {
                    let details: Vec<Value> =
                        issues.iter().map(crate::validate::issue_json).collect();
                    let mut meta = Map::new();
                    meta.insert(ISSUES_META_KEY.to_owned(), Value::Array(details));
                    result = result.with_meta(Some(rmcp::model::MetaObject(meta)));
                }
                let name = failure.outcome_name();
                let report = CallReport {
                    result,
                    data: Value::String(message),
                    system_rules: Vec::new(),
                    ui_blocks: Vec::new(),
                };
                (
                    Rendered {
                        report,
                        failure: Some(failure),
                    },
                    name,
                )
            }
        }
    }
}

struct Rendered {
    report: CallReport,
    failure: Option<Failure>,
}
