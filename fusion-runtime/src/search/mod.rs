//! Tool search: a large catalog listed as two tools, `search_tools` and `call_tool`
//! (issue 58).
//!
//! Each listed tool costs the model about a thousand tokens of context before it does
//! anything. With [`ServerBuilder::tool_search`](crate::ServerBuilder::tool_search), a
//! server lists, in place of its catalog:
//!
//! - [`SEARCH_TOOLS`] (`query`, `limit`): the caller's tools that best match the words
//!   of the query (names, titles, descriptions, group and action names, tags and
//!   parameter names, ranked by BM25), each with its description, annotations and full
//!   input schema, so that the model can call it correctly on its next turn;
//! - [`CALL_TOOL`] (`name`, `arguments`): calls the named tool as if the client had
//!   called it by its own name, through the same pipeline (validation, visibility,
//!   policies, middleware, idempotency, tasks, the call log); its result is that tool's.
//!
//! Every tool stays callable by its own name. A caller never finds a tool it may not call:
//! the search sees only the tools [`visibility`](crate::ServerBuilder::visibility) and
//! [`hide_unauthorized`](crate::ServerBuilder::hide_unauthorized) show it, and a call to
//! any other is refused as a call to a tool that does not exist.
//!
//! The search is bounded whatever the query: at most [`MAX_QUERY_CHARS`] characters and
//! [`MAX_QUERY_WORDS`] words (longer queries are refused with a tool error that says so),
//! at most [`MAX_LIMIT`] results; words are matched as words, never as patterns.
//!
//! ```
//! use fusion_runtime::{prelude::*, search::ToolSearch, testing::Tester};
//! use serde_json::json;
//!
//! /// Add a note to the notebook.
//! #[mcp_tool]
//! async fn add_note(text: String) -> String { format!("added {text}") }
//!
//! /// Delete a user account.
//! #[mcp_tool(destructive)]
//! async fn delete_user(id: u32) -> String { format!("deleted {id}") }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let server = Server::builder("office", "1")
//!     .tool_search(ToolSearch::always())
//!     .tool(add_note)
//!     .tool(delete_user)
//!     .build();
//! let tester = Tester::new(server);
//! assert_eq!(tester.tools().await, ["search_tools", "call_tool"]);
//!
//! let found = tester.call("search_tools", json!({ "query": "notes" })).await;
//! let hits = &found.data["tools"];
//! assert_eq!(hits[0]["name"], "add_note");
//! assert_eq!(hits[0]["inputSchema"]["required"], json!(["text"]));
//!
//! let called = tester
//!     .call("call_tool", json!({ "name": "add_note", "arguments": { "text": "milk" } }))
//!     .await;
//! assert_eq!(called.data, "added milk");
//! // And by its own name, as ever.
//! assert_eq!(tester.call("add_note", json!({ "text": "eggs" })).await.data, "added eggs");
//! # });
//! ```

mod bm25;
mod builder;
pub(crate) mod index;
pub(crate) mod listed;

/// The tool search a server built with `registry` serves, if any (`search` when it
/// applies to as many tools as it lists); its two names taken by the server's own tools
/// are build errors.
pub(crate) fn applied<C>(
    search: Option<ToolSearch>,
    registry: Option<&crate::setup::registry::Registry<C>>,
    errors: &mut Vec<crate::BuildError>,
) -> Option<ToolSearch> {
    let registry = registry?;
    let search = search.filter(|search| search.applies_to(registry.wire.len()))?;
    errors.extend(
        [SEARCH_TOOLS, CALL_TOOL]
            .into_iter()
            .filter(|name| registry.knows(name))
            .map(|name| crate::BuildError::ToolSearchNameTaken(name.to_owned())),
    );
    Some(search)
}

/// The name of the tool that searches the catalog.
pub const SEARCH_TOOLS: &str = "search_tools";
/// The name of the tool that calls a tool by name.
pub const CALL_TOOL: &str = "call_tool";
/// The longest query `search_tools` takes, in characters: a few sentences.
pub const MAX_QUERY_CHARS: usize = 1024;
/// The most words a query may have: enough to describe a task, too few to make the search
/// work hard.
pub const MAX_QUERY_WORDS: usize = 32;
/// The most results one search returns (`limit`).
pub const MAX_LIMIT: usize = 50;
/// The results a search returns when it does not say (`limit`), unless
/// [`ToolSearch::default_limit`] sets another.
pub const DEFAULT_LIMIT: usize = 5;

/// When a server lists `search_tools` and `call_tool` in place of its tools
/// ([`ServerBuilder::tool_search`](crate::ServerBuilder::tool_search)), and how many
/// results a search returns by default.
///
/// ```
/// use fusion_runtime::search::ToolSearch;
///
/// // Always; ten results unless the model asks for another number.
/// let always = ToolSearch::always().default_limit(10);
/// assert!(always.applies_to(1));
/// assert_eq!(always.limit(), 10);
///
/// // Only once the catalog is large: more than 30 listed tools.
/// let large = ToolSearch::past_tools(30);
/// assert!(!large.applies_to(30));
/// assert!(large.applies_to(31));
/// assert_eq!(large.limit(), 5);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolSearch {
    /// Searched only when the server lists more tools than this (`None`: always).
    past_tools: Option<usize>,
    limit: usize,
}

impl ToolSearch {
    /// Tool search whatever the number of tools.
    pub fn always() -> Self {
        Self {
            past_tools: None,
            limit: DEFAULT_LIMIT,
        }
    }

    /// Tool search once the server lists more than `count` tools (a grouped tool counts
    /// once); with `count` or fewer, `tools/list` lists them all as usual.
    pub fn past_tools(count: usize) -> Self {
        Self {
            past_tools: Some(count),
            limit: DEFAULT_LIMIT,
        }
    }

    /// How many results a search returns when the model gives no `limit`
    /// ([`DEFAULT_LIMIT`] unless set), kept within 1 and [`MAX_LIMIT`].
    pub fn default_limit(mut self, limit: usize) -> Self {
        self.limit = limit.clamp(1, MAX_LIMIT);
        self
    }

    /// How many results a search returns when the model gives no `limit`.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Whether a server that lists `listed` tools searches them.
    pub fn applies_to(&self, listed: usize) -> bool {
        self.past_tools.is_none_or(|count| listed > count)
    }
}

impl Default for ToolSearch {
    /// [`ToolSearch::always`].
    fn default() -> Self {
        Self::always()
    }
}
