//! The builder's settings for who is shown which tools: [`ServerBuilder::hide_unauthorized`]
//! and [`ServerBuilder::visibility`].

use std::sync::Arc;

use crate::{identity::RequestInfo, setup::builder::ServerBuilder, tool::ToolSpec};

impl<C: Send + Sync + 'static> ServerBuilder<C> {
    /// Shows each caller only the tools, and the actions of grouped tools, whose `scopes`
    /// (`#[mcp_tool(scopes = [..])]`) its verified token grants. A tool a caller is not
    /// shown is answered, when called, exactly as a tool that does not exist (`unknown_tool`,
    /// or `unknown_action` for an action of a grouped tool it is shown other actions of),
    /// and no did-you-mean names it: a guest learns nothing of the admin tools. Over stdio
    /// and in memory, where the caller is the process's owner, a caller without a token is
    /// shown everything, as it may call everything.
    ///
    /// The list then depends on the caller: under 2026-07-28 it is sent with
    /// `cacheScope: "private"`, and a session whose caller's grants change (a new token with
    /// other scopes) is sent `notifications/tools/list_changed`.
    ///
    /// ```
    /// use fusion_runtime::{identity::{Claims, RequestInfo}, prelude::*, testing::Tester};
    ///
    /// /// Read a row.
    /// #[mcp_tool(read_only, scopes = ["db:read"])]
    /// async fn read_row(id: u32) -> String { format!("row {id}") }
    ///
    /// /// Drop the table.
    /// #[mcp_tool(destructive, scopes = ["db:admin"])]
    /// async fn drop_table() -> String { "dropped".into() }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let server = Server::builder("db", "1")
    ///     .hide_unauthorized(true)
    ///     .tool(read_row)
    ///     .tool(drop_table)
    ///     .build();
    /// let reader = Tester::new(server).as_caller(
    ///     RequestInfo::in_memory().with_claims(Claims::for_subject("ann", ["db:read"])),
    /// );
    /// assert_eq!(reader.tools().await, ["read_row"]);
    /// let hidden = reader.call("drop_table", serde_json::json!({})).await;
    /// assert_eq!(hidden.failure().and_then(|f| f.code).as_deref(), Some("unknown_tool"));
    /// # });
    /// ```
    pub fn hide_unauthorized(mut self, hide: bool) -> Self {
        self.hide_unauthorized = hide;
        self
    }

    /// Adds a rule of your own for which tools a caller is shown: `rule(spec, request)`
    /// says whether the caller of `request` is shown the handler `spec` (a tool, or one
    /// action of a grouped tool). A handler is shown when every rule says so (and, with
    /// [`Self::hide_unauthorized`], its scopes are granted). What a caller is not shown it
    /// cannot call: the call is answered as one to a tool that does not exist.
    ///
    /// Rules often read the tools' tags (`#[mcp_tool(tags = ["beta"])]`, [`ToolSpec::tags`](crate::tool::ToolSpec::tags))
    /// and the caller's identity ([`RequestInfo`]). They run on every `tools/list` and
    /// `tools/call` of a server that has any, so keep them cheap.
    ///
    /// ```
    /// use fusion_runtime::{identity::{Claims, RequestInfo}, prelude::*, testing::Tester};
    ///
    /// /// The new search.
    /// #[mcp_tool(read_only, tags = ["beta"])]
    /// async fn search_v2(text: String) -> String { text }
    ///
    /// /// The search.
    /// #[mcp_tool(read_only)]
    /// async fn search(text: String) -> String { text }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// // Beta tools only for callers whose token grants `beta`.
    /// let server = Server::builder("search", "1")
    ///     .visibility(|tool, request| {
    ///         !tool.tags.contains(&"beta")
    ///             || request.claims().is_some_and(|claims| claims.has_scope("beta"))
    ///     })
    ///     .tool(search_v2)
    ///     .tool(search)
    ///     .build();
    /// let tester = Tester::new(server);
    /// assert_eq!(tester.tools().await, ["search"]);
    /// let tester_in_beta = tester.as_caller(
    ///     RequestInfo::in_memory().with_claims(Claims::for_subject("bea", ["beta"])),
    /// );
    /// assert_eq!(tester_in_beta.tools().await, ["search_v2", "search"]);
    /// # });
    /// ```
    pub fn visibility(
        mut self,
        rule: impl Fn(&ToolSpec, &RequestInfo) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.visibility_rules.push(Arc::new(rule));
        self
    }
}
