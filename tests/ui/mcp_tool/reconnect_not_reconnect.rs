use fusion_runtime::prelude::*;

struct App {
    db: String,
}

/// Flaky.
#[mcp_tool(reconnect = db, retry(attempts = 2))]
async fn flaky(#[ctx] app: &App) -> String {
    app.db.clone()
}

fn main() {}
