use fusion_runtime::prelude::*;

/// Flaky.
#[mcp_tool(retry(backoff = "10ms"))]
async fn flaky() -> String {
    String::new()
}

fn main() {}
