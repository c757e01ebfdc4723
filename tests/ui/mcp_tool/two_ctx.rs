use fusion_runtime::prelude::*;

struct App;

/// Two contexts.
#[mcp_tool]
async fn both(#[ctx] a: &App, #[ctx] b: &App) -> String {
    let _ = (a, b);
    String::new()
}

fn main() {}
