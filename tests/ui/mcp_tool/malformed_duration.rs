use fusion_runtime::prelude::*;

/// Slow.
#[mcp_tool(timeout = "5 sec", retry(attempts = 3, backoff = "fast"))]
async fn slow() -> String {
    String::new()
}

fn main() {}
