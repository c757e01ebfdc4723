//! The contract's data: what a client and the model see of a server, and the recovery
//! promises behind each tool, as plain serializable values. Built from a server in
//! `surface.rs`; compared in `diff.rs`; read and written as a lockfile in `lockfile.rs`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The lockfile format this version of fusion writes and reads.
pub const FORMAT: u32 = 1;

/// A server's surface as canonical data: its tools (each grouped tool with its actions),
/// resources, resource templates and prompts, keyed by name, so that registration order,
/// map order and whitespace do not change it.
///
/// The server's name and version are not part of it: a release that changes no tool has
/// the same contract.
///
/// ```
/// use fusion_runtime::prelude::*;
///
/// /// Echo the text back.
/// #[mcp_tool(read_only)]
/// async fn echo(text: String) -> String {
///     text
/// }
///
/// let contract = Server::builder("demo", "1.0.0").tool(echo).build().contract();
/// let tool = &contract.tools["echo"];
/// assert_eq!(tool.description, "Echo the text back.");
/// assert_eq!(tool.annotations.read_only, Some(true));
/// assert_eq!(contract.digest().len(), 64);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Contract {
    /// The lockfile format ([`FORMAT`]).
    pub format: u32,
    /// The listed tools by name.
    pub tools: BTreeMap<String, ToolContract>,
    /// The fixed resources by URI.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resources: BTreeMap<String, ResourceContract>,
    /// The resource templates by URI template.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_templates: BTreeMap<String, ResourceContract>,
    /// The prompts by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub prompts: BTreeMap<String, PromptContract>,
    /// Present when `tools/list` lists `search_tools` and `call_tool` in place of the tools
    /// ([`ServerBuilder::tool_search`](crate::ServerBuilder::tool_search)); the tools above
    /// are still callable by their names. Absent otherwise, so a contract without tool
    /// search reads and hashes as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_search: Option<ToolSearchContract>,
    /// What the whole `tools/list` result costs a client that declares no extension, when
    /// measured ([`Server::contract`](crate::Server::contract) measures it). Left out of
    /// the [`digest`](Self::digest): it follows from the surface, and the tokenizer is not
    /// loaded to serve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<TokenCost>,
}

/// Tool search as a client sees it: how many results `search_tools` returns.
///
/// ```
/// use fusion_runtime::{prelude::*, search::ToolSearch};
///
/// /// Echo the text back.
/// #[mcp_tool(read_only)]
/// async fn echo(text: String) -> String { text }
///
/// let server = Server::builder("demo", "1")
///     .tool_search(ToolSearch::always())
///     .tool(echo)
///     .build();
/// let search = server.contract().tool_search.expect("tool search is on");
/// assert_eq!((search.default_limit, search.max_limit), (5, 50));
/// // The tool is still in the contract: it is callable by its name.
/// assert!(server.contract().tools.contains_key("echo"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ToolSearchContract {
    /// The results a search returns when it gives no `limit`.
    pub default_limit: u32,
    /// The most results one search may ask for.
    pub max_limit: u32,
}

/// One listed tool, or one action of a grouped tool.
///
/// A grouped tool (listed as one tool whose `action` property picks the handler) has its
/// `actions`, each a `ToolContract` of its own; its own `input_schema`, `output_schema` and
/// `policy` are then absent, because the listed schema is built from the actions'.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ToolContract {
    /// The human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the model reads. For a grouped tool, the description given to
    /// [`ServerBuilder::group`](crate::ServerBuilder::group), if any (the listed text adds a
    /// line per action, from the actions' own descriptions).
    pub description: String,
    /// The input schema, normalized: references inlined, object keys and `required` sorted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
    /// The output schema, normalized the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// The behaviour hints.
    #[serde(default, skip_serializing_if = "Hints::is_empty")]
    pub annotations: Hints,
    /// The OAuth scopes a caller must hold, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Its tags (`#[mcp_tool(tags = [..])]`), sorted: visibility rules read them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// How a call is recovered, with the server's defaults applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicyContract>,
    /// Whether the tool runs as a task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskSupport>,
    /// A grouped tool's actions by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub actions: BTreeMap<String, ToolContract>,
    /// What this tool's entry in `tools/list` costs, when measured; absent on an action
    /// (its grouped tool is one entry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<TokenCost>,
}

/// A tool's behaviour hints, as `tools/list` sends them. `None` is a hint not given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Hints {
    /// `readOnlyHint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// `destructiveHint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// `idempotentHint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// `openWorldHint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

impl Hints {
    /// True when no hint is given.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

impl From<crate::tool::Annotations> for Hints {
    fn from(annotations: crate::tool::Annotations) -> Self {
        Self {
            read_only: annotations.read_only,
            destructive: annotations.destructive,
            idempotent: annotations.idempotent,
            open_world: annotations.open_world,
        }
    }
}

/// What a tool promises about recovery: the effective timeout, retries, breaker and
/// idempotency key, in milliseconds where they are durations.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PolicyContract {
    /// The deadline of one run.
    pub timeout_ms: u64,
    /// Retries of transient failures; absent when the tool runs once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryContract>,
    /// The circuit breaker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub circuit: Option<CircuitContract>,
    /// The argument whose value deduplicates calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// The argument whose value serializes calls (`serialize = ".."`): calls that share
    /// it run one at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serialize: Option<String>,
    /// The most bytes a result may carry (`max_output`): a text result over it is cut, a
    /// structured one refused.
    pub max_output_bytes: u64,
    /// How identical calls are answered from the cache (`cache = ".."`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheContract>,
    /// The cached tools whose entries this tool's success drops (`invalidates = [..]`),
    /// sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invalidates: Vec<String>,
}

/// A cache policy in the contract.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct CacheContract {
    /// How long an answer is fresh.
    pub ttl_ms: u64,
    /// How much longer it may be served, marked stale, while the tool fails.
    pub stale_if_error_ms: u64,
    /// `private` or `public`.
    pub scope: String,
}

/// The size of what `tools/list` sends: its compact JSON in bytes, and the same text in
/// `o200k_base` tokens.
///
/// ```
/// use fusion_runtime::contract::TokenCost;
///
/// let cost = TokenCost::of(r#"{"name":"echo","description":"Echo the text back."}"#);
/// assert_eq!(cost.bytes, 51);
/// assert!(cost.tokens > 5 && cost.tokens < 30, "{cost:?}");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct TokenCost {
    /// The UTF-8 bytes.
    pub bytes: u64,
    /// The `o200k_base` tokens.
    pub tokens: u64,
}

impl TokenCost {
    /// The cost of `text` as a model reads it.
    pub fn of(text: &str) -> Self {
        let tokens = tiktoken_rs::o200k_base_singleton()
            .encode_ordinary(text)
            .len();
        Self {
            bytes: count(text.len()),
            tokens: count(tokens),
        }
    }
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// A retry policy in the contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RetryContract {
    /// Runs in all.
    pub attempts: u32,
    /// The first wait.
    pub backoff_ms: u64,
    /// The longest wait.
    pub max_backoff_ms: u64,
}

/// A circuit breaker in the contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct CircuitContract {
    /// Consecutive transient failures that open it.
    pub failures: u32,
    /// The window they fall within.
    pub window_ms: u64,
    /// How long it stays open.
    pub cooldown_ms: u64,
}

/// How a tool runs as a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskSupport {
    /// A task when the client asks; an ordinary call otherwise.
    Optional,
    /// Only as a task: a client without the tasks extension cannot call it.
    Required,
}

/// A resource or a resource template.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ResourceContract {
    /// Its name.
    pub name: String,
    /// Its title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of its content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// A prompt.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PromptContract {
    /// Its title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub arguments: BTreeMap<String, PromptArgumentContract>,
}

/// One argument of a prompt.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PromptArgumentContract {
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether a caller must give it.
    #[serde(default)]
    pub required: bool,
}

impl Contract {
    /// The contract as canonical JSON: every object's keys in order, no whitespace.
    pub fn to_canonical_json(&self) -> String {
        crate::canonical_json::canonical(&self.to_value()).to_string()
    }

    /// The SHA-256 of [`to_canonical_json`](Self::to_canonical_json), in lowercase hex:
    /// equal for equal surfaces, whatever order things were registered in.
    pub fn digest(&self) -> String {
        crate::canonical_json::fingerprint(&self.without_costs().to_value())
    }

    /// The contract with its measured costs left out: what the digest covers.
    pub(crate) fn without_costs(&self) -> Self {
        let mut surface = self.clone();
        surface.cost = None;
        for tool in surface.tools.values_mut() {
            tool.cost = None;
        }
        surface
    }

    /// The contract as a lockfile's text: canonical, indented, one trailing newline (so a
    /// change shows as a readable diff in review).
    pub fn to_lockfile(&self) -> String {
        let canonical = crate::canonical_json::canonical(&self.to_value());
        let mut text = serde_json::to_string_pretty(&canonical).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Reads a lockfile's text.
    ///
    /// # Errors
    /// When the text is not a contract of a format this version reads.
    pub fn from_lockfile(text: &str) -> Result<Self, String> {
        let contract: Self = serde_json::from_str(text)
            .map_err(|error| format!("not a fusion lockfile: {error}"))?;
        if contract.format != FORMAT {
            return Err(format!(
                "a lockfile of format {} (this fusion reads format {FORMAT})",
                contract.format
            ));
        }
        Ok(contract)
    }

    fn to_value(&self) -> Value {
        // A struct of strings, maps and numbers always serializes.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}
