//! Grouped tools, presenters, middleware, `#[call]` and `#[mcp_type]` compile.
use fusion_runtime::{
    Call,
    call::LogLevel,
    middleware,
    prelude::*,
    tool::{Exposure, Presentation, UiBlock},
};

#[derive(Clone, Default)]
struct Ctx {
    admin: bool,
}

impl middleware::HasRoles for Ctx {
    fn has_role(&self, role: &str) -> bool {
        self.admin && role == "admin"
    }
}

#[mcp_type]
#[derive(Serialize, JsonSchema)]
struct Row {
    id: u32,
}

fn rows(found: &[Row], ctx: &Ctx) -> Presentation {
    Presentation::new()
        .rule(if ctx.admin { "admin view" } else { "guest view" })
        .ui(UiBlock::markdown(format!("{} rows", found.len())))
}

/// List rows.
#[mcp_tool(group = "rows", action = "list", read_only, presenter = rows)]
async fn list(#[ctx] _ctx: &Ctx, #[call] call: &Call) -> Vec<Row> {
    call.progress(1.0, Some(1.0), None).await;
    call.log(LogLevel::Info, "listing").await;
    vec![Row { id: 1 }]
}

/// Delete rows (action name from the function).
#[mcp_tool(group = "rows", destructive)]
async fn delete(#[ctx] _ctx: &Ctx) {}

fn main() {
    let _ = Server::builder("groups", "0")
        .context(Ctx::default)
        .exposure(Exposure::Flat)
        .group("rows", "Rows.")
        .tool(list)
        .tool(delete)
        .group_middleware("rows", middleware::require_role("admin"))
        .middleware(middleware::rate_limit(100.0, 10))
        .tool_middleware("delete", middleware::concurrency_limit(1, 0))
        .build();
}
