//! How a tool's schemas are listed to clients: with every reference inlined (some clients do
//! not resolve `$ref`), the parts a schema repeats hoisted into `$defs` once
//! (`tool/hoist.rs`), or as schemars wrote them.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::setup::builder::ServerBuilder;

/// The listing options of [`ServerBuilder::keep_schema_refs`] and
/// [`ServerBuilder::hoist_shared_schemas`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct SchemaListing {
    /// Schemas listed as schemars wrote them, `$defs` and `$ref`s included.
    pub(crate) keep_refs: bool,
    /// A subschema repeated within one schema listed once, under `$defs`.
    pub(crate) hoist: bool,
}

impl Default for SchemaListing {
    fn default() -> Self {
        Self {
            keep_refs: false,
            hoist: true,
        }
    }
}

impl SchemaListing {
    /// `schema` as clients get it.
    pub(crate) fn listed(self, schema: &Arc<Map<String, Value>>) -> Arc<Map<String, Value>> {
        let has_refs = schema.contains_key("$defs");
        if self.keep_refs || (!has_refs && !self.hoist) {
            return Arc::clone(schema);
        }
        let mut listed = (**schema).clone();
        if has_refs {
            crate::tool::schema::inline_refs(&mut listed);
        }
        let hoisted = self.hoist && crate::tool::hoist::hoist_shared(&mut listed);
        if !has_refs && !hoisted {
            return Arc::clone(schema);
        }
        Arc::new(listed)
    }
}

impl<C> ServerBuilder<C> {
    /// Lists schemas with `$defs` and `$ref`s, as schemars writes them, instead of inlining
    /// every reference (the default: some clients do not resolve references).
    pub fn keep_schema_refs(mut self, keep: bool) -> Self {
        self.schema_listing.keep_refs = keep;
        self
    }

    /// Whether a subschema that one tool's schema repeats (the same `filter` object in
    /// several actions of a grouped tool) is listed once under `$defs` and referenced, when
    /// that makes the listing shorter: on by default. Everything else stays inline. Turn it
    /// off for a client that resolves no `$ref` at all.
    ///
    /// ```
    /// use fusion_runtime::{prelude::*, testing::Tester};
    ///
    /// /// Which notes to read.
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Filter {
    ///     /// Only notes with this word in their title.
    ///     title_contains: Option<String>,
    ///     /// Only notes changed after this date (YYYY-MM-DD).
    ///     changed_after: Option<String>,
    /// }
    ///
    /// /// Count the notes.
    /// #[mcp_tool(group = "notes", action = "count", read_only)]
    /// async fn count_notes(filter: Filter) -> u64 { 0 }
    ///
    /// /// List the notes.
    /// #[mcp_tool(group = "notes", action = "list", read_only)]
    /// async fn list_notes(filter: Filter) -> Vec<String> { Vec::new() }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let listed = |hoist: bool| async move {
    ///     let server = Server::builder("notes", "1")
    ///         .hoist_shared_schemas(hoist)
    ///         .tool(count_notes)
    ///         .tool(list_notes)
    ///         .build();
    ///     let tools = Tester::new(server).list_tools().await;
    ///     serde_json::to_string(&tools[0].input_schema).unwrap()
    /// };
    /// let (hoisted, inline) = (listed(true).await, listed(false).await);
    /// assert!(hoisted.contains(r##""$ref":"#/$defs/filter""##), "{hoisted}");
    /// assert!(hoisted.len() < inline.len());
    /// # });
    /// ```
    pub fn hoist_shared_schemas(mut self, hoist: bool) -> Self {
        self.schema_listing.hoist = hoist;
        self
    }
}
