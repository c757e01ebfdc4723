//! What a tool is to the runtime: its static description ([`ToolSpec`], [`Annotations`]),
//! the type-erased [`ToolDefinition`] that `#[mcp_tool]` builds and the server registers,
//! what a handler returns ([`ToolOutput`], [`IntoToolOutput`], [`Outcome`]) and how it is
//! presented ([`Presentation`], [`UiBlock`]), the JSON Schemas of its input and output
//! ([`schema`]), and how grouped tools are listed ([`Exposure`], [`ACTION_KEY`]).
//!
//! Inside, what `#[mcp_tool]`'s generated code relies on: its arguments (`argument.rs`),
//! their constraints (`constraint.rs`), the autoref probe that picks an impl by method
//! resolution (`autoref.rs`), the output ladder (`output.rs`) and presenters
//! (`present.rs`), and the masks of `#[redact]` fields ([`Redact`]).

pub(crate) mod argument;
pub(crate) mod constraint;
pub(crate) mod fields;
pub(crate) mod hoist;
pub(crate) mod listing;
pub(crate) mod output;
pub(crate) mod present;
pub(crate) mod redact;
pub mod schema;

pub use output::{IntoToolOutput, Outcome, ToolOutput};
pub use present::{Presentation, PresenterFn, UiBlock};
pub use redact::Redact;

/// The property that selects an action in a grouped tool.
pub const ACTION_KEY: &str = "action";

/// How grouped tools appear in `tools/list`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Exposure {
    /// One tool per group, with an `action` property (fewer tools for the model to scan).
    #[default]
    Grouped,
    /// One tool per action, named `<group>_<action>` (simpler schemas).
    Flat,
}

use std::{marker::PhantomData, sync::Arc};

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{
    call::Call,
    validate::{ArgIssue, Validator},
};

use crate::future::BoxFuture;

/// A tool that a [`Server`](crate::Server) whose per-call context is `C` can register.
///
/// `#[mcp_tool]` implements it on the unit struct that replaces the annotated function,
/// so `.tool(add)` names the tool once and nothing else. A tool without a `#[ctx]`
/// parameter implements it for every context type; a tool whose `#[ctx]` parameter is
/// `&App` implements it for `App` only.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool that a server with context `{C}` can register",
    label = "not an `#[mcp_tool]` for context `{C}`",
    note = "annotate an `async fn` with `#[mcp_tool]` and pass the function's name; a tool whose `#[ctx]` parameter is `&T` needs a server built with `.context(..)` returning `T`"
)]
pub trait Tool<C>: Send + Sync + 'static {
    /// Everything the server needs to list, validate and call this tool.
    fn definition(&self) -> ToolDefinition<C>;
}

/// Behaviour hints shown to clients (MCP `ToolAnnotations`). `None` leaves a hint out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Annotations {
    /// The tool does not modify its environment.
    pub read_only: Option<bool>,
    /// The tool may perform destructive updates.
    pub destructive: Option<bool>,
    /// Calling the tool twice with the same arguments has no further effect.
    pub idempotent: Option<bool>,
    /// The tool talks to an open world of external entities (the web, a third-party API).
    pub open_world: Option<bool>,
}

impl Annotations {
    /// True when no hint is set, so the annotations can be left off the wire.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// The static part of a tool: name, description, title and annotations.
#[derive(Clone, Debug)]
pub struct ToolSpec {
    /// The MCP tool name (1–128 characters of `A-Za-z0-9_-.`).
    pub name: &'static str,
    /// What the tool does, shown to the model.
    pub description: &'static str,
    /// A human-readable title.
    pub title: Option<&'static str>,
    /// Behaviour hints.
    pub annotations: Annotations,
    /// Timeout, retries and circuit breaker; unset parts come from the server.
    pub policy: crate::policy::Policy,
    /// The grouped tool this handler is an action of.
    pub group: Option<&'static str>,
    /// The action's name within its group.
    pub action: Option<&'static str>,
    /// The argument whose value identifies a call for deduplication.
    pub idempotency_key: Option<&'static str>,
    /// The argument whose value serializes calls (`#[mcp_tool(serialize = "account")]`):
    /// calls that share its value run one at a time, in arrival order, under a lock of
    /// the server's [`LockStore`](crate::lock::LockStore).
    pub serialize: Option<&'static str>,
    /// The OAuth scopes the caller's token must grant (`scopes = [..]`); checked before
    /// any middleware, against [`RequestInfo::claims`](crate::identity::RequestInfo::claims).
    pub scopes: &'static [&'static str],
    /// Labels of the tool (`#[mcp_tool(tags = ["beta"])]`), for visibility rules
    /// ([`ServerBuilder::visibility`](crate::ServerBuilder::visibility)) and the contract.
    pub tags: &'static [&'static str],
    /// Whether the call's span (feature `otel`) records its arguments as
    /// `gen_ai.tool.call.arguments`, secrets redacted (`#[mcp_tool(trace_arguments)]`);
    /// off by default: arguments may hold what a trace backend should not keep.
    pub trace_arguments: bool,
    /// The most bytes the tool's result may carry (`#[mcp_tool(max_output = "64KiB")]`);
    /// `None` takes the server's ([`ServerBuilder::max_output`](crate::ServerBuilder::max_output),
    /// by default [`DEFAULT_MAX_OUTPUT`](crate::limits::DEFAULT_MAX_OUTPUT)).
    pub max_output: Option<usize>,
    /// How long identical calls are answered from the cache, with the stale window and
    /// the scope (`#[mcp_tool(cache = "30s", stale_if_error = "10m", cache_scope = "public")]`);
    /// `None`: every call runs the handler. See [`cache`](crate::cache).
    pub cache: Option<crate::policy::cache::CachePolicy>,
    /// The cached tools whose entries this tool's success drops, for every caller
    /// (`#[mcp_tool(invalidates = ["quote", "db_user.find_many"])]`): a tool's name, or a
    /// group's and an action's joined by a dot.
    pub invalidates: &'static [&'static str],
}

impl ToolSpec {
    /// Destructive and not idempotent: running it twice may do the harm twice, so the
    /// runtime never retries it.
    pub fn is_unsafe_to_repeat(&self) -> bool {
        self.annotations.destructive == Some(true) && self.annotations.idempotent != Some(true)
    }

    /// Declared safe to run a second time: `read_only`, or `idempotent` (running it twice
    /// has the effect of running it once). Only such a tool's work is run again when the
    /// replica running it stopped part-way (a task taken over, a key whose earlier run
    /// stopped); any other ends as an unknown outcome, whether or not it has an
    /// idempotency key: a key says "the same request", not "harmless to repeat".
    pub fn is_safe_to_repeat(&self) -> bool {
        self.annotations.read_only == Some(true) || self.annotations.idempotent == Some(true)
    }
}

/// A tool with its types erased: its spec, its schemas, its argument validator and a
/// way to call it with JSON arguments.
pub struct ToolDefinition<C> {
    pub(crate) spec: ToolSpec,
    pub(crate) input_schema: Arc<serde_json::Map<String, Value>>,
    pub(crate) output_schema: Option<Arc<serde_json::Map<String, Value>>>,
    /// Whether structured results are wrapped as `{"result": value}` because the output
    /// type is not a JSON object (MCP requires `structuredContent` to be an object).
    pub(crate) wrap_structured: bool,
    pub(crate) validator: Validator,
    /// Argument names marked `secret` (at any depth): hidden in logs and messages.
    pub(crate) secret_keys: Vec<String>,
    /// Defaults that break their own field's schema, found at registration.
    pub(crate) default_issues: Vec<ArgIssue>,
    pub(crate) invoker: Box<dyn Invoke<C>>,
    /// Re-establishes the resource the tool depends on, before a retry.
    pub(crate) reconnect: Option<Box<dyn ReconnectHook<C>>>,
}

/// Reconnects a tool's resource, found in the call's context. Returns whether this call
/// ran the reconnect (another caller's may have covered it) and its error.
pub(crate) trait ReconnectHook<C>:
    for<'a> Fn(&'a C) -> BoxFuture<'a, (bool, Result<(), String>)> + Send + Sync
{
}

impl<C, F> ReconnectHook<C> for F where
    F: for<'a> Fn(&'a C) -> BoxFuture<'a, (bool, Result<(), String>)> + Send + Sync
{
}

impl<C> std::fmt::Debug for ToolDefinition<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolDefinition")
            .field("spec", &self.spec)
            .field("input_schema", &self.input_schema)
            .field("output_schema", &self.output_schema)
            .finish_non_exhaustive()
    }
}

impl<C: Send + Sync + 'static> ToolDefinition<C> {
    /// Builds a definition from the tool's argument type `A` (decoded strictly from the
    /// call's JSON arguments), its output schema and the function that runs it.
    ///
    /// This is what `#[mcp_tool]` generates a call to; hand-written tools may use it too.
    pub fn new<A, F>(spec: ToolSpec, output_schema: Option<schemars::Schema>, run: F) -> Self
    where
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        F: for<'a> Fn(&'a C, &'a Call, A) -> BoxFuture<'a, Outcome> + Send + Sync + 'static,
    {
        // Only the schema and the invoker depend on `A` and `F`; the rest is built by one
        // function shared by every tool, so a crate's tools do not each compile a copy of
        // it (issue 32, item 6: compile time).
        Self::from_parts(
            spec,
            schema::input_schema::<A>(),
            output_schema,
            Box::new(Invoker::<A, F, BySerde> {
                run,
                _args: PhantomData,
            }),
        )
    }

    /// [`ToolDefinition::new`] for an argument struct decoded field by field (what
    /// `#[mcp_tool]` generates for parameters without attributes; see [`fields`]).
    pub(crate) fn from_fields<A, F>(
        spec: ToolSpec,
        output_schema: Option<schemars::Schema>,
        run: F,
    ) -> Self
    where
        A: fields::FieldArgs,
        F: for<'a> Fn(&'a C, &'a Call, A) -> BoxFuture<'a, Outcome> + Send + Sync + 'static,
    {
        Self::from_parts(
            spec,
            schema::input_schema::<fields::FieldsSchema<A>>(),
            output_schema,
            Box::new(Invoker::<A, F, ByField> {
                run,
                _args: PhantomData,
            }),
        )
    }

    /// The part of [`ToolDefinition::new`] that does not depend on the tool's types: the
    /// validator compiled from the schema, the portable schemas, the secret keys.
    fn from_parts(
        spec: ToolSpec,
        mut input_schema: serde_json::Map<String, Value>,
        output_schema: Option<schemars::Schema>,
        invoker: Box<dyn Invoke<C>>,
    ) -> Self {
        // The validator reads the schema as schemars wrote it (fixed-width integer formats
        // tell it the ranges serde enforces); clients get the portable form.
        let validator = Validator::compile(&input_schema);
        let default_issues = validator.check_defaults(&input_schema);
        let secret_keys = schema::secret_keys(&input_schema);
        schema::make_portable(&mut input_schema);
        if let Some(key) = spec.idempotency_key {
            schema::describe_idempotency_key(&mut input_schema, key);
        }
        let (output_schema, wrap_structured) = match output_schema {
            Some(schema) => {
                let (mut schema, wrapped) = schema::output_object_schema(schema);
                schema::make_portable(&mut schema);
                (Some(Arc::new(schema)), wrapped)
            }
            None => (None, false),
        };
        Self {
            spec,
            input_schema: Arc::new(input_schema),
            output_schema,
            wrap_structured,
            validator,
            secret_keys,
            default_issues,
            invoker,
            reconnect: None,
        }
    }

    /// Names the resource to reconnect before a retry: `find` picks it out of the context
    /// (what `#[mcp_tool(reconnect = field)]` generates).
    pub fn with_reconnect<F>(mut self, find: F) -> Self
    where
        F: for<'a> Fn(&'a C) -> BoxFuture<'a, (bool, Result<(), String>)> + Send + Sync + 'static,
    {
        self.reconnect = Some(Box::new(find));
        self
    }

    /// Lists `schema` as the tool's input schema, as written (a schema with keywords
    /// the argument type cannot express: `x-mcp-header` annotations, `if`/`then`/`else`,
    /// a `$schema` of its own). Arguments are still decoded and validated by the argument
    /// type, so `schema` must accept no less than the type does.
    ///
    /// ```
    /// use fusion_runtime::{Tool, prelude::*};
    ///
    /// /// Echoes the region.
    /// #[mcp_tool]
    /// async fn region(region: String) -> String {
    ///     region
    /// }
    ///
    /// let schema = serde_json::json!({
    ///     "type": "object",
    ///     "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
    ///     "required": ["region"]
    /// });
    /// let definition = Tool::<()>::definition(&region).with_input_schema(schema);
    /// assert_eq!(definition.input_schema()["properties"]["region"]["x-mcp-header"], "Region");
    /// ```
    pub fn with_input_schema(mut self, schema: Value) -> Self {
        if let Value::Object(schema) = schema {
            self.input_schema = Arc::new(schema);
        }
        self
    }

    /// The tool's spec.
    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// The input JSON Schema (`type: object`, one property per parameter).
    pub fn input_schema(&self) -> &serde_json::Map<String, Value> {
        &self.input_schema
    }

    /// The output JSON Schema, for tools that return a structured type.
    pub fn output_schema(&self) -> Option<&serde_json::Map<String, Value>> {
        self.output_schema.as_deref()
    }
}

/// Decodes arguments and starts the handler: the erased half of a definition.
pub(crate) trait Invoke<C>: Send + Sync {
    fn invoke<'a>(
        &'a self,
        ctx: &'a C,
        call: &'a Call,
        args: &Value,
        validator: &Validator,
    ) -> Result<BoxFuture<'a, Outcome>, Vec<ArgIssue>>;
}

struct Invoker<A, F, D> {
    run: F,
    /// The argument type, and how it is decoded ([`BySerde`] or [`ByField`]).
    _args: PhantomData<fn() -> (A, D)>,
}

/// How an [`Invoker`] decodes its argument type `A`.
trait DecodeArgs<A> {
    fn decode(validator: &Validator, args: &Value, call: &Call) -> Result<A, Vec<ArgIssue>>;
}

/// With `A`'s `Deserialize` ([`ToolDefinition::new`]).
struct BySerde;

impl<A: DeserializeOwned> DecodeArgs<A> for BySerde {
    fn decode(validator: &Validator, args: &Value, call: &Call) -> Result<A, Vec<ArgIssue>> {
        validator.decode_with::<A>(args, call.number_literals())
    }
}

/// Field by field ([`ToolDefinition::from_fields`]).
struct ByField;

impl<A: fields::FieldArgs> DecodeArgs<A> for ByField {
    fn decode(validator: &Validator, args: &Value, call: &Call) -> Result<A, Vec<ArgIssue>> {
        fields::decode::<A>(validator, args, call.number_literals())
    }
}

impl<C, A, F, D> Invoke<C> for Invoker<A, F, D>
where
    C: Send + Sync + 'static,
    A: Send + 'static,
    F: for<'a> Fn(&'a C, &'a Call, A) -> BoxFuture<'a, Outcome> + Send + Sync + 'static,
    D: DecodeArgs<A> + 'static,
{
    fn invoke<'a>(
        &'a self,
        ctx: &'a C,
        call: &'a Call,
        args: &Value,
        validator: &Validator,
    ) -> Result<BoxFuture<'a, Outcome>, Vec<ArgIssue>> {
        let args = D::decode(validator, args, call)?;
        Ok((self.run)(ctx, call, args))
    }
}
