//! The builder's setting for tool search: [`ServerBuilder::tool_search`].

use crate::{search::ToolSearch, setup::builder::ServerBuilder};

impl<C: Send + Sync + 'static> ServerBuilder<C> {
    /// Lists two tools, `search_tools` and `call_tool`, in place of the catalog, always
    /// ([`ToolSearch::always`]) or once the server lists more than a number of tools
    /// ([`ToolSearch::past_tools`]): a model then spends its context on the few tools it
    /// searches for, not on a thousand tokens for each tool of the catalog. Every tool
    /// stays callable by its own name, under all its policies; the search finds only the
    /// tools the caller is shown. See [`search`](crate::search) for what the two tools
    /// take and answer.
    ///
    /// The server's contract records it ([`Contract::tool_search`](crate::contract::Contract::tool_search)).
    /// A tool of the server's own named `search_tools` or `call_tool` is then a
    /// [`BuildError::ToolSearchNameTaken`](crate::BuildError::ToolSearchNameTaken).
    ///
    /// ```
    /// use fusion_runtime::{prelude::*, search::ToolSearch, testing::Tester};
    ///
    /// /// Read a row.
    /// #[mcp_tool(read_only)]
    /// async fn read_row(id: u32) -> String { format!("row {id}") }
    ///
    /// /// Write a row.
    /// #[mcp_tool]
    /// async fn write_row(id: u32) -> String { format!("wrote {id}") }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// // Two tools are not many: listed as they are.
    /// let small = Server::builder("db", "1")
    ///     .tool_search(ToolSearch::past_tools(20))
    ///     .tool(read_row)
    ///     .tool(write_row)
    ///     .build();
    /// assert_eq!(Tester::new(small).tools().await, ["read_row", "write_row"]);
    ///
    /// let searched = Server::builder("db", "1")
    ///     .tool_search(ToolSearch::past_tools(1).default_limit(3))
    ///     .tool(read_row)
    ///     .tool(write_row)
    ///     .build();
    /// assert_eq!(Tester::new(searched).tools().await, ["search_tools", "call_tool"]);
    /// # });
    /// ```
    pub fn tool_search(mut self, search: ToolSearch) -> Self {
        self.tool_search = Some(search);
        self
    }
}
