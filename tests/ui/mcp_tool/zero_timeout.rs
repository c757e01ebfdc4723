use fusion_runtime::prelude::*;

/// Never runs.
#[mcp_tool(timeout = "0ms")]
async fn never() -> String {
    String::new()
}

fn main() {}
