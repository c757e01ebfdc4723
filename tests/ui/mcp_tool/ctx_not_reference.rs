use fusion_runtime::prelude::*;

struct App;

/// Owned context.
#[mcp_tool]
async fn owned(#[ctx] app: App) -> String {
    let _ = app;
    String::new()
}

fn main() {}
