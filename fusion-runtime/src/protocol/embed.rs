//! fusion's tools inside a server written with rmcp: a [`ToolRouter`] whose routes run
//! each call through fusion's pipeline (validation, recovery, middleware, the call log),
//! to add (`+`) to an rmcp handler's own router.

use rmcp::{
    handler::server::router::tool::{ToolRoute, ToolRouter},
    model::{CallToolRequestParams, CallToolResponse},
};

use crate::setup::server::Server;

impl<C: Send + Sync + 'static> Server<C> {
    /// The server's tools as an rmcp [`ToolRouter`] for any rmcp handler type `S`: each
    /// route runs the call through this server's pipeline, so arguments are validated,
    /// failures recovered and classified, middleware applied and every call logged, as
    /// when fusion serves them itself. Add it to the handler's own router; the tools are
    /// listed as [`tools`](Self::tools) lists them (one per group, or per action).
    ///
    /// ```
    /// use fusion_runtime::prelude::*;
    /// use rmcp::handler::server::router::tool::ToolRouter;
    ///
    /// /// Add two integers.
    /// #[mcp_tool]
    /// async fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// /// An rmcp server of the team's own.
    /// struct Existing {
    ///     tools: ToolRouter<Existing>,
    /// }
    ///
    /// let fusion = Server::builder("calc", "1.0.0").tool(add).build();
    /// let existing = Existing {
    ///     tools: ToolRouter::new() + fusion.tool_router(),
    /// };
    /// assert!(existing.tools.has_route("add"));
    /// ```
    pub fn tool_router<S: Send + Sync + 'static>(&self) -> ToolRouter<S> {
        let mut router = ToolRouter::new();
        for tool in self.tools() {
            let server = self.clone();
            router.add_route(ToolRoute::new_dyn(tool.clone(), move |context| {
                let server = server.clone();
                let mut request = CallToolRequestParams::new(context.name.clone());
                request.arguments = context.arguments;
                let request_context = context.request_context;
                Box::pin(async move {
                    let result = super::call::serve_call(&server, request, request_context).await;
                    Ok(CallToolResponse::from(result))
                })
            }));
        }
        router
    }
}
